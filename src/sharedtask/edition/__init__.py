"""A new edition, from submissions to truth (docs/assessment.md).

``pooling`` picks the items assessors judge from the submitted runs by the task spec's
``pooling:`` rule; ``agreement`` measures how far assessors agree on the items they both
judged; ``qrels`` merges judgments into the task's official qrels and registers them as a
dataset's truth. The service's assessment (campaigns, assessor pages) builds on these.
"""
