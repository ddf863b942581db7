"""Submitted images: a ``docker save`` archive checked member by member, rewritten by us, loaded once by id.

Why: ``docker load`` trusts the archive. It extracts every member (links too), then reads
``manifest.json`` by a path that follows links, applies the ``RepoTags`` it finds there
(and, without a manifest, the legacy ``repositories`` file), and unpacks each layer,
compressed or not, to disk before it compares the layer with the image config. A team's
archive could therefore rename any image of the server (``sharedtask/base``, a
baseline, the evaluator) to its own, or make dockerd write gigabytes from a few KB.

So nothing a team wrote reaches dockerd except the image config and the layer blobs:

* :func:`clean_archive` reads the upload with its own strict tar reader. Only regular
  files and folders are accepted: a symbolic or hard link, a device, a FIFO or a sparse
  file is refused by name, as are absolute names, names with ``..``, a name that occurs
  twice, and a member under a name that is a file. Of ``manifest.json`` only the paths
  of one image's ``Config`` and ``Layers`` are used; each must be a regular file of the
  archive. A new archive is written that holds exactly our own ``manifest.json``
  (``RepoTags`` null), the config and the layers under names we choose: no
  ``repositories``, no OCI ``index.json`` (whose ``io.containerd.image.name`` and
  ``org.opencontainers.image.ref.name`` annotations name images on a containerd image
  store), no other member.
* :func:`load_archive` loads only such an archive. Before dockerd sees it, each layer is
  decompressed as a stream (plain tar or gzip, the formats ``docker save`` and the
  common image tools write; bzip2, xz and zstd, which some docker versions also take,
  are refused because their expanded size would not be checked) and the expanded bytes
  are counted against the limit, without being written anywhere; the layer's tar
  headers are read on the way, so that a sparse entry (a few bytes that dockerd would
  expand to its full size) is refused too, and the stream's sha256 must be the config's
  ``diff_id``. Then the image is loaded, docker's answer must name no image (only
  ``Loaded image ID:``), and it is tagged in our own namespace only.

Layout of the archive: the Docker image specification, "Combined Image JSON + Filesystem
Changeset Format" (moby/moby, image/spec/v1.2.md); the OCI image layout
(opencontainers/image-spec, image-layout.md) for ``index.json`` and ``oci-layout``,
which newer ``docker save`` adds next to ``manifest.json``. Tar headers: POSIX ustar and
pax (IEEE 1003.1-2008, "pax Interchange Format") and GNU long names; limits and the
rules for which entries carry data follow Go's ``archive/tar``, the reader dockerd uses.

The package's modules: ``bounds`` (limits and refusals), ``spools`` (an upload on its way to
disk), ``tar`` (the strict tar reader), ``archive`` (the check and the rewrite, layer sizes),
``loading`` (into Docker).
"""

from __future__ import annotations

from sharedtask.service.uploads.archive import clean_archive
from sharedtask.service.uploads.bounds import HINT, UploadError
from sharedtask.service.uploads.loading import SUBMISSIONS_REPOSITORY, LoadedImage, load_archive, named_image
from sharedtask.service.uploads.spools import Spool, remove_stale_spools, spool_path

__all__ = ["HINT", "SUBMISSIONS_REPOSITORY", "LoadedImage", "Spool", "UploadError", "clean_archive", "load_archive",
           "named_image", "remove_stale_spools", "spool_path"]
