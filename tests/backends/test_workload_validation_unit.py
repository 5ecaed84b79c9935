"""Rules of ``_workload_validation`` the recorded exchanges do not reach (1.30's,
learned from kubernetes pkg/apis/{apps,batch}/validation and robfig/cron v3)."""

from __future__ import annotations

from typing import Any

import pytest

from ownergc_backends.memory._workload_validation import (
    schedule_error,
    workload_errors,
    workload_update_errors,
)


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("*/5 * * * *", None),
        ("0 0 1,,15 * *", None),  # (empty list items are skipped)
        ("0 0 ? * SUN", None),
        ("5/15 * * * *", None),
        ("@midnight", None),
        ("@every 1h30m", None),
        ("bogus", "expected exactly 5 fields, found 1: [bogus]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        (
            "@every 1.5.h",
            'failed to parse duration @every 1.5.h: time: missing unit in duration "1.5.h"',
        ),
        ("@bogus", "unrecognized descriptor: @bogus"),
        ("TZ=UTC 0 0 * * *", None),
        (
            "TZ=Nowhere/Land 0 0 * * *",
            "provided bad location Nowhere/Land: unknown time zone Nowhere/Land",
        ),
    ],
)
def test_schedule_as_cron_v3_parses_it(schedule: str, error: str | None) -> None:
    assert schedule_error(schedule) == error


def _messages(errors: list[Any]) -> list[str]:
    return [error.message() for error in errors]


def _job(**spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]},
    }
    return {"spec": {"template": template, "completionMode": "NonIndexed", **spec}}


def test_a_suspended_job_that_never_started_may_change_where_it_runs() -> None:
    old = _job(suspend=True)
    new = _job(suspend=True)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert workload_update_errors("batch", "jobs", new, old) == []
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "j"
    assert [e.field for e in workload_update_errors("batch", "jobs", new, old)] == ["spec.template"]
    running = _job(suspend=False)
    moved = _job(suspend=False)
    moved["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert [e.field for e in workload_update_errors("batch", "jobs", moved, running)] == [
        "spec.template"
    ]


def test_an_indexed_job_scales_completions_with_parallelism() -> None:
    old = _job(completionMode="Indexed", completions=2, parallelism=2)
    assert (
        workload_update_errors(
            "batch", "jobs", _job(completionMode="Indexed", completions=4, parallelism=4), old
        )
        == []
    )
    assert _messages(
        workload_update_errors(
            "batch", "jobs", _job(completionMode="Indexed", completions=4, parallelism=2), old
        )
    ) == [
        "spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"
    ]


def test_a_job_update_lists_its_spec_errors_twice() -> None:
    old = _job(parallelism=1)
    messages = _messages(workload_update_errors("batch", "jobs", _job(parallelism=-1), old))
    assert (
        messages == ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"] * 2
    )


def _cron(schedule: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "c"},
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": _job()["spec"]},
            **spec,
        },
    }


def test_a_cronjob_keeps_a_tz_schedule_it_already_had() -> None:
    tz = _cron("TZ=UTC 0 0 * * *")
    assert [e.detail for e in workload_errors("batch", "cronjobs", tz)] == [
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    ]
    assert workload_update_errors("batch", "cronjobs", _cron("TZ=UTC 0 1 * * *"), tz) == []
    both = _cron("TZ=UTC 0 1 * * *", timeZone="UTC")
    assert [e.detail for e in workload_update_errors("batch", "cronjobs", both, tz)] == [
        "cannot use both timeZone field and TZ or CRON_TZ in schedule"
    ]


def test_cronjob_time_zone() -> None:
    assert workload_errors("batch", "cronjobs", _cron("0 0 * * *", timeZone="Europe/Paris")) == []
    assert [
        e.detail for e in workload_errors("batch", "cronjobs", _cron("0 0 * * *", timeZone="Local"))
    ] == ["timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"]


def _hpa(**spec: Any) -> dict[str, Any]:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    return {"apiVersion": "autoscaling/v2", "spec": {"scaleTargetRef": target, **spec}}


def test_an_hpa_scales_to_zero_only_on_object_or_external_metrics() -> None:
    external = {
        "type": "External",
        "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1"}},
    }
    cpu = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
    }
    resource = "horizontalpodautoscalers"
    on_cpu = workload_errors(
        "autoscaling", resource, _hpa(minReplicas=0, maxReplicas=2, metrics=[cpu])
    )
    on_queue = workload_errors(
        "autoscaling", resource, _hpa(minReplicas=0, maxReplicas=2, metrics=[external])
    )
    assert "spec.metrics" in [e.field for e in on_cpu]
    assert "spec.metrics" not in [e.field for e in on_queue]


def test_a_statefulset_may_change_its_retention_policy() -> None:
    old = {
        "spec": {
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "OnDelete"},
            "serviceName": "s",
        }
    }
    new = {
        "spec": {
            **old["spec"],
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": "Delete",
                "whenScaled": "Retain",
            },
            "minReadySeconds": 5,
        }
    }
    assert workload_update_errors("apps", "statefulsets", new, old) == []


def test_an_update_leaving_a_stored_spec_as_it_is_passes() -> None:
    # (an object loaded from elsewhere, never validated, stays writable)
    loaded = {"spec": {"replicas": -1, "strategy": {"type": "Bogus"}}}
    relabelled = {"metadata": {"labels": {"a": "b"}}, "spec": loaded["spec"]}
    assert workload_update_errors("apps", "deployments", relabelled, loaded) == []
    scaled = {"spec": {**loaded["spec"], "replicas": -2}}
    assert workload_update_errors("apps", "deployments", scaled, loaded) != []
