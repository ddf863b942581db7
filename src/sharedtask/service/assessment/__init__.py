"""Assessment in the service (issue 37): a third role beside teams and the organizer.

Teams mark their runs primary or alternate (:mod:`.runs`); the organizer pools the submitted runs
(:mod:`sharedtask.edition.pooling`) and opens a judging campaign on the pool (:mod:`.campaigns`);
assessors (:mod:`.people`) judge the items of the topics assigned to them, on pages that show
each document safely (:mod:`.documents`) on the task's scale (:mod:`.scale`); closing the campaign
assembles the qrels (:mod:`sharedtask.edition.qrels`) and the service's boards score against them.
The web routes (``service/web/assessment.py``) import this package, never the reverse.
"""
