"""What a run leaves on disk: the run document (``assay.run/v1``) and the state folder."""
