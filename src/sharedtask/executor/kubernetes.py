"""The sandbox policy as Kubernetes objects: a Job per run and a default-deny NetworkPolicy, in a
Namespace that enforces the restricted Pod Security Standard.

Rendered only: no cluster exists where this was written, so nothing here has run
on one (docs/operators.md, "The path to Kubernetes"). Every field comes from the same
:class:`~sharedtask.sandbox.policy.Policy` the Docker sandbox enforces, mapped to
the Kubernetes API (v1 Job, PodSecurityContext/SecurityContext, ResourceRequirements,
EmptyDir sizeLimit, networking.k8s.io/v1 NetworkPolicy, RuntimeClass), built with the
official ``kubernetes`` client's models so that a misspelt field fails here.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import Job
from sharedtask.sandbox.policy import (INPUT_MOUNT, OUTPUT_MOUNT, SANDBOX_USER, Limits, Policy, parse_runtime,
                                       parse_user)
from sharedtask.sandbox.cpu import profile as cpu_profile
from sharedtask.sandbox.runner import contract_environment, substitute

JOB_LABEL = "sharedtask.io/job"
#: Pod Security Admission's labels (kubernetes.io/docs/concepts/security/pod-security-admission/):
#: enforce the restricted profile, and warn and audit against it too.
POD_SECURITY = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}\Z")
#: The RuntimeClass name gVisor's documentation uses for runsc (gvisor.dev, "Kubernetes").
GVISOR_RUNTIME_CLASS = "gvisor"


#: Room left in a 63-character label after a name for its suffix ("-deny-all").
_SUFFIX_ROOM = 9


def object_name(text: str) -> str:
    """An RFC 1123 label (what Kubernetes accepts as an object name): lower case, digits, '-', <= 63."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].rstrip("-") or "run"


def claim_name(dataset_id: str, taken: dict[str, str]) -> str:
    """The PersistentVolumeClaim the organizer makes for a dataset's ``input/``: its id as a label,
    readable because the organizer creates it by hand; ``taken`` (claim -> dataset id, of this
    rendering) refuses two datasets that fold to one claim, which would mount one's data for the other."""
    name = object_name(dataset_id)
    if taken.setdefault(name, dataset_id) != dataset_id:
        raise SharedTaskError(f"datasets {taken[name]!r} and {dataset_id!r} would both be mounted from the "
                              f"claim {name!r}", hint="give the datasets ids that differ in letters or digits")
    return name


def _name(text: str, unique: str) -> str:
    """An RFC 1123 label (what Kubernetes accepts as an object name), unique per ``unique``: ``text``
    in lower case, digits and '-', cut to fit, then '-' and 12 hex digits of ``unique``'s sha256, so
    two runs whose names read the same once cut or folded (71 and 72 characters, ``a/b`` and
    ``a-b``) never share a name; at most 63 - 9 characters, leaving room for ``-deny-all``."""
    digest = hashlib.sha256(unique.encode("utf-8")).hexdigest()[:12]
    readable = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    readable = readable[:63 - _SUFFIX_ROOM - 1 - len(digest)].rstrip("-") or "run"
    return f"{readable}-{digest}"


def policy_for(job: Job) -> Policy:
    """The sandbox policy of the job: the task's limits with the job's overrides, as `sharedtask run` builds it."""
    from sharedtask.spec import load_task

    task = load_task(job.task)
    opts = job.options
    limits = Limits.from_spec(task.sandbox).with_overrides(
        memory=opts.get("memory"), cpus=opts.get("cpus"), timeout=opts.get("timeout"), pids=opts.get("pids"),
        max_output=opts.get("max_output"), disk=opts.get("disk"))
    # A pod cannot take the organizer's own uid ("me"): the fixed unprivileged sandbox user instead.
    user = opts.get("user")
    return Policy(limits=limits, network=opts.get("network"),
                  user=parse_user(user) if user not in (None, "me") else SANDBOX_USER,
                  read_only_root=bool(opts.get("read_only_root", False)),
                  runtime=parse_runtime(opts.get("runtime") or task.sandbox.runtime),
                  cpu=cpu_profile(opts.get("cpu")).name)


def _client() -> Any:
    try:
        from kubernetes import client
    except ImportError:
        raise SharedTaskError("rendering Kubernetes manifests needs the kubernetes package",
                              hint="pip install 'sharedtask[kubernetes]'") from None
    return client


def render(job: Job, *, image: str, input_claim: str, namespace: str = "sharedtask") -> list[Any]:
    """[V1Job, V1NetworkPolicy] for one job; ``input_claim`` is the PersistentVolumeClaim holding
    the dataset's ``input/`` (mounted read-only), ``image`` the reference with its digest."""
    k = _client()

    if not _DIGEST.search(image):
        raise SharedTaskError(f"{job.software}: Kubernetes would pull {image!r} by a tag, which can change",
                              hint="push the images to a registry (demo --kubernetes DIR --images-registry HOST:PORT): "
                                   "the manifests then name each image by its digest")
    policy = policy_for(job)
    lim = policy.limits
    uid, _, gid = (policy.user or SANDBOX_USER).partition(":")
    name = _name(job.software, f"{job.software}\0{job.id}")
    labels = {JOB_LABEL: job.id, "app.kubernetes.io/managed-by": "sharedtask"}
    amounts = {"cpu": f"{int(lim.cpus * 1000)}m", "memory": str(lim.memory), "ephemeral-storage": str(lim.disk)}
    env = {**cpu_profile(job.options.get("cpu")).env(),
           **contract_environment(str(job.options.get("dataset_id", job.dataset.id)), False)}
    container = k.V1Container(
        name="run",
        image=image,
        image_pull_policy="IfNotPresent",
        command=["sh", "-c"] if job.command is not None else None,
        args=[substitute(job.command, False)] if job.command is not None else None,
        # HOME on the scratch volume: the root file system is read-only
        env=[k.V1EnvVar(name=key, value=value) for key, value in sorted({"HOME": "/tmp", **env}.items())],
        resources=k.V1ResourceRequirements(requests=dict(amounts), limits=dict(amounts)),  # Guaranteed QoS
        security_context=k.V1SecurityContext(
            run_as_non_root=True, run_as_user=int(uid), run_as_group=int(gid or uid),
            allow_privilege_escalation=False, privileged=False,
            capabilities=k.V1Capabilities(drop=["ALL"]),
            # always: the only writable places are the bounded volumes below (output, /tmp)
            read_only_root_filesystem=True,
            seccomp_profile=k.V1SeccompProfile(type="RuntimeDefault")),
        volume_mounts=[k.V1VolumeMount(name="input", mount_path=INPUT_MOUNT, read_only=True),
                       k.V1VolumeMount(name="output", mount_path=OUTPUT_MOUNT),
                       k.V1VolumeMount(name="tmp", mount_path="/tmp")],
    )
    pod = k.V1PodSpec(
        restart_policy="Never",
        automount_service_account_token=False,
        enable_service_links=False,
        hostname="tira-sandbox",
        runtime_class_name=GVISOR_RUNTIME_CLASS if policy.runtime == "runsc" else None,
        security_context=k.V1PodSecurityContext(run_as_non_root=True, fs_group=int(gid or uid),
                                                seccomp_profile=k.V1SeccompProfile(type="RuntimeDefault")),
        containers=[container],
        volumes=[
            k.V1Volume(name="input", persistent_volume_claim=k.V1PersistentVolumeClaimVolumeSource(
                claim_name=input_claim, read_only=True)),
            k.V1Volume(name="output", empty_dir=k.V1EmptyDirVolumeSource(size_limit=str(lim.max_output))),
            k.V1Volume(name="tmp", empty_dir=k.V1EmptyDirVolumeSource(medium="Memory", size_limit=str(lim.memory))),
        ],
    )
    kube_job = k.V1Job(
        api_version="batch/v1", kind="Job",
        metadata=k.V1ObjectMeta(name=name, namespace=namespace, labels=labels),
        spec=k.V1JobSpec(
            backoff_limit=0,  # a failed run is reported, not retried
            active_deadline_seconds=int(math.ceil(lim.timeout)),
            ttl_seconds_after_finished=3600,
            template=k.V1PodTemplateSpec(metadata=k.V1ObjectMeta(labels=labels), spec=pod)),
    )
    deny = k.V1NetworkPolicy(
        api_version="networking.k8s.io/v1", kind="NetworkPolicy",
        metadata=k.V1ObjectMeta(name=f"{name}-deny-all", namespace=namespace, labels=labels),
        # Selected pods, both directions named, no rule: nothing in, nothing out (TIRA: no network).
        spec=k.V1NetworkPolicySpec(pod_selector=k.V1LabelSelector(match_labels={JOB_LABEL: job.id}),
                                   policy_types=["Ingress", "Egress"]),
    )
    return [kube_job, deny] if policy.network is None else [kube_job]


def image_reference(job: Job) -> str:
    """The image as a pod pulls it: the registry reference by digest a job carries
    (``registry:<name>@sha256:...``), else the job's own reference (refused by :func:`render`
    unless it names a digest)."""
    source = job.image_source or ""
    return source.partition(":")[2] if source.startswith("registry:") else job.image


def namespace(name: str = "sharedtask") -> Any:
    """The Namespace of the runs, labelled so that Pod Security Admission enforces the restricted
    profile: a pod that is not as restricted as :func:`render` makes it is refused by the cluster."""
    k = _client()
    return k.V1Namespace(api_version="v1", kind="Namespace",
                         metadata=k.V1ObjectMeta(name=name, labels={**POD_SECURITY,
                                                                    "app.kubernetes.io/managed-by": "sharedtask"}))


def write_namespace(folder: Path, name: str = "sharedtask") -> Path:
    """``folder/namespace.yaml``: apply it before the runs' manifests."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "namespace.yaml"
    path.write_text(yaml.safe_dump(_client().ApiClient().sanitize_for_serialization(namespace(name)),
                                   sort_keys=False), encoding="utf-8")
    return path


def write_manifests(job: Job, folder: Path, **kw: Any) -> Path:
    """The job's objects as one multi-document YAML file ``folder/<name>.yaml``."""
    import yaml

    objects = render(job, **kw)
    api = _client().ApiClient()
    docs = [api.sanitize_for_serialization(obj) for obj in objects]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{objects[0].metadata.name}.yaml"
    _refuse_collision(path, job)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def _refuse_collision(path: Path, job: Job) -> None:
    """Refuse to replace another job's manifest: names are unique by their hash suffix, so this
    only happens on a hash collision or a folder shared with other renderings; one run's manifest
    must never silently take another's place."""
    import yaml

    if not path.exists():
        return
    try:
        owners = {(d.get("metadata") or {}).get("labels", {}).get(JOB_LABEL)
                  for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)}
    except (OSError, yaml.YAMLError):
        owners = {None}
    if owners != {job.id}:
        raise SharedTaskError(f"{job.software}: {path} already holds another run's manifest",
                              hint="render into an empty folder; two runs must never share a Job name")
