"""A submission's image as the server keeps it, or a note that says the server lost it.

Why (issue 39): when an image went from the server's Docker daemon between the upload and
the run, the note told the team to ``docker pull`` it, which a team cannot do for the server.
"""

from __future__ import annotations

from sharedtask.errors import SharedTaskError


def server_image_id(reference: str) -> str:
    """The id of the image the server stored for a submission; a clear note when it is gone."""
    import docker

    from sharedtask.images.client import docker_client

    try:
        return str(docker_client().images.get(reference).id)
    except docker.errors.ImageNotFound:
        raise SharedTaskError(f"the server lost this submission's image {reference}: it is no longer in the "
                              "server's Docker daemon (removed after the upload)",
                              hint="nothing for the team to fix: the organizer loads it again and re-runs "
                                   "the submission, or the team submits it again") from None
