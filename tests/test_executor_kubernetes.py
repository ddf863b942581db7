"""The Kubernetes rendering, read back through the official client's models and checked field by field
against the sandbox policy. No cluster exists here: these manifests have not run on one."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import yaml

from sharedtask.executor import DatasetRef, Job
from sharedtask.errors import SharedTaskError
from sharedtask.executor.kubernetes import GVISOR_RUNTIME_CLASS, JOB_LABEL, claim_name, write_manifests
from sharedtask.sandbox.policy import INPUT_MOUNT, OUTPUT_MOUNT, Limits
from sharedtask.spec import load_task

TASK = "touche-2021-task1"


def job(**options) -> Job:
    return Job(task=TASK, software="Team_A run#1", image="team-a/run:1", image_id="sha256:" + "a" * 64,
               command="python /app/run.py $inputDataset $outputDir",
               dataset=DatasetRef("touche-2021-task1/official", {}), options={"dataset_id": "touche-2021", **options})


def read_back(path):
    from kubernetes import client as k

    api = k.ApiClient()
    docs = list(yaml.safe_load_all(path.read_text()))
    kinds = {d["kind"]: d for d in docs}
    kube_job = api.deserialize(json.dumps(kinds["Job"]), "V1Job", "application/json")
    policy = api.deserialize(json.dumps(kinds["NetworkPolicy"]), "V1NetworkPolicy", "application/json") if "NetworkPolicy" in kinds else None
    return kube_job, policy


def test_a_job_per_run_carries_the_sandbox_policy(tmp_path):
    the_job = job()
    path = write_manifests(the_job, tmp_path, image="127.0.0.1:5000/team-a/run@sha256:" + "b" * 64,
                           input_claim="touche-2021-official")
    kube_job, deny = read_back(path)
    limits = Limits.from_spec(load_task(TASK).sandbox)
    spec = kube_job.spec
    assert spec.backoff_limit == 0
    assert spec.active_deadline_seconds == math.ceil(limits.timeout)
    pod = spec.template.spec
    assert pod.restart_policy == "Never" and pod.automount_service_account_token is False
    assert pod.runtime_class_name is None
    (container,) = pod.containers
    assert container.image.endswith("@sha256:" + "b" * 64)
    res = container.resources
    assert res.requests == res.limits
    assert res.limits["memory"] == str(limits.memory) and res.limits["ephemeral-storage"] == str(limits.disk)
    assert res.limits["cpu"] == f"{int(limits.cpus * 1000)}m"
    sc = container.security_context
    assert sc.run_as_non_root is True and sc.run_as_user != 0
    assert sc.allow_privilege_escalation is False and sc.privileged is False
    assert sc.capabilities.drop == ["ALL"] and not sc.capabilities.add
    mounts = {m.mount_path: m for m in container.volume_mounts}
    assert mounts[INPUT_MOUNT].read_only is True and not mounts[OUTPUT_MOUNT].read_only
    volumes = {v.name: v for v in pod.volumes}
    assert volumes["input"].persistent_volume_claim.claim_name == "touche-2021-official"
    assert volumes["input"].persistent_volume_claim.read_only is True
    assert volumes["output"].empty_dir.size_limit == str(limits.max_output)
    assert container.args == ["python /app/run.py /tira-data/input /tira-data/output"]
    env = {e.name: e.value for e in container.env}
    assert env["TIRA_DATASET_ID"] == "touche-2021" and env["outputDir"] == OUTPUT_MOUNT
    suffix = hashlib.sha256(f"{the_job.software}\0{the_job.id}".encode()).hexdigest()[:12]
    assert kube_job.metadata.name == "team-a-run-1-" + suffix  # an RFC 1123 name, unique by the run's hash
    # Default deny: the job's pods, both directions, not one rule.
    assert deny.spec.pod_selector.match_labels == {JOB_LABEL: the_job.id}
    assert sorted(deny.spec.policy_types) == ["Egress", "Ingress"]
    assert not deny.spec.ingress and not deny.spec.egress
    assert spec.template.metadata.labels[JOB_LABEL] == the_job.id


def test_overrides_gvisor_and_a_network_are_rendered(tmp_path):
    path = write_manifests(job(timeout="90s", memory="2g", cpus=0.5, runtime="runsc"), tmp_path,
                           image="x@sha256:" + "c" * 64, input_claim="c")
    kube_job, deny = read_back(path)
    assert kube_job.spec.active_deadline_seconds == 90
    assert kube_job.spec.template.spec.runtime_class_name == GVISOR_RUNTIME_CLASS
    assert kube_job.spec.template.spec.containers[0].resources.limits["cpu"] == "500m"
    assert deny is not None
    open_path = write_manifests(job(network="bridge"), tmp_path / "open", image="x@sha256:" + "c" * 64,
                                input_claim="c")
    assert read_back(open_path)[1] is None  # a run allowed on the network gets no deny policy


def test_a_bad_override_is_the_sandbox_error(tmp_path):
    from sharedtask.errors import SharedTaskError

    with pytest.raises(SharedTaskError, match="runtime"):
        write_manifests(job(runtime="kata"), tmp_path, image="x@sha256:" + "c" * 64, input_claim="c")


def test_an_image_without_a_digest_is_refused_saying_how(tmp_path):
    from sharedtask.errors import SharedTaskError

    with pytest.raises(SharedTaskError, match="by a tag") as caught:
        write_manifests(job(), tmp_path, image="team-a/run:1", input_claim="c")
    assert "--images-registry" in str(caught.value.hint) and not list(tmp_path.iterdir())


def test_the_root_is_read_only_scratch_bounded_and_the_namespace_enforces_restricted(tmp_path):
    from sharedtask.executor.kubernetes import POD_SECURITY, image_reference, write_namespace

    kube_job, _ = read_back(write_manifests(job(), tmp_path, image="x@sha256:" + "d" * 64, input_claim="c"))
    pod = kube_job.spec.template.spec
    (container,) = pod.containers
    assert container.security_context.read_only_root_filesystem is True
    writable = {m.mount_path for m in container.volume_mounts if not m.read_only}
    assert writable == {OUTPUT_MOUNT, "/tmp"}  # nothing else can be written
    limits = Limits.from_spec(load_task(TASK).sandbox)
    sizes = {v.name: v.empty_dir.size_limit for v in pod.volumes if v.empty_dir is not None}
    assert sizes == {"output": str(limits.max_output), "tmp": str(limits.memory)}
    assert {e.name: e.value for e in container.env}["HOME"] == "/tmp"
    namespace = yaml.safe_load(write_namespace(tmp_path, "contest").read_text())
    assert namespace["metadata"]["name"] == "contest"
    assert {k: v for k, v in namespace["metadata"]["labels"].items() if k.startswith("pod-security")} == {
        "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted"} == POD_SECURITY
    pinned = "127.0.0.1:5000/team-a/run@sha256:" + "e" * 64
    assert image_reference(Job(**{**job().__dict__, "image_source": f"registry:{pinned}"})) == pinned
    assert image_reference(Job(**{**job().__dict__, "image_source": "archive:/x/y.tar"})) == "team-a/run:1"


def test_long_software_names_that_differ_only_past_the_cut_get_their_own_job_and_file(tmp_path):
    """Issue 39: names of 71 and 72 characters rendered to one Job name and one file."""
    base = "a" * 71
    paths = []
    for software in (base, base + "b"):
        the_job = Job(task=TASK, software=software, image="team-a/run:1", image_id="sha256:" + "a" * 64,
                      command="true", dataset=DatasetRef("touche-2021-task1/official", {}),
                      options={"dataset_id": "touche-2021"})
        paths.append(write_manifests(the_job, tmp_path, image="x@sha256:" + "e" * 64, input_claim="c"))
    assert paths[0] != paths[1] and all(p.exists() for p in paths)
    (first, deny1), (second, deny2) = read_back(paths[0]), read_back(paths[1])
    names = {first.metadata.name, second.metadata.name, deny1.metadata.name, deny2.metadata.name}
    assert len(names) == 4 and all(len(n) <= 63 for n in names)
    assert first.metadata.labels[JOB_LABEL] != second.metadata.labels[JOB_LABEL]


def test_a_file_holding_another_runs_manifest_is_not_replaced(tmp_path):
    path = write_manifests(job(), tmp_path, image="x@sha256:" + "d" * 64, input_claim="c")
    text = path.read_text()
    path.write_text(text.replace(job().id, "job-someone-else"))
    with pytest.raises(SharedTaskError, match="another run's manifest"):
        write_manifests(job(), tmp_path, image="x@sha256:" + "d" * 64, input_claim="c")
    assert "job-someone-else" in path.read_text()


def test_two_datasets_folding_to_one_claim_are_refused():
    taken: dict[str, str] = {}
    assert claim_name("team/a.b", taken) == "team-a-b"
    assert claim_name("team/a.b", taken) == "team-a-b"
    with pytest.raises(SharedTaskError, match="both be mounted"):
        claim_name("team-a/b", taken)
