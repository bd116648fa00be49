"""Where assay decides: every status, outcome and answer is computed in this room, and nowhere else.

* ``precedence``: how statuses combine (ERR > FAIL > PASS).
* ``sample``: a sample's status from its checks.
* ``row``: a row's verdict, its steps in order, with every reason.
* ``case``: how an A/B arm ended its case, the case's verdict, a suite's verdict.
* ``gates``: a ship gate's answer, with what broke it, or why it was not evaluated.
* ``run``: the run's own verdict.
* ``answer``: the run's two answers (its verdict, the baseline gate's) and its exit code.

Reports, the gate and Prefect ask these modules; none derives a status on its own
(``tests/test_decisions.py`` fails if one does). The words and colours that show a status
are ``reports.status_words``.
"""
