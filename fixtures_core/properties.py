"""What a row's property holds: any YAML scalar or structure (CEL sees it as dyn).

Below ``spec`` and ``suite`` (rows and arms both carry properties).
"""

PropertyValue = object
