"""Software images: read, built and shipped by id.

- ``dockerfile``: a participant's Dockerfile, checked before the organizer's daemon builds it;
- ``context``: the build context, collected by us into the archive dockerd receives;
- ``build``: building baselines, submissions and the evaluator (skipped when up to date);
- ``client``: one docker SDK client per process;
- ``shipping``: images travel to workers by reference and id (archive, URL or registry).

Nothing is imported here: each command loads only the module it uses (tests/test_startup.py).
"""
