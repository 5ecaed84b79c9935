"""The spec rules of the workload kinds, as kube-apiserver 1.30 checks them.

Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs,
CronJobs, HorizontalPodAutoscalers and PodDisruptionBudgets: counts that may not be
negative, the strategies and their enums, int-or-percent values, a CronJob's
schedule (robfig/cron v3's standard parser, as 1.30 uses it) and time zone, and the
fields an update may not change. Label selectors (``_spec_validation``) and the pod
template's PodSpec are checked elsewhere; what is here runs on the defaulted object
(the body in its storage shape), as a real server's validation does.

Values that Go prints with ``%#v`` (an ``intstr.IntOrString``, a strategy struct)
are shown that way; where such a struct holds a pointer Go prints its address,
which differs on every request: serve prints ``0xc000000000``.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable
from typing import Any, Final, TypeGuard

from ._patch import json_equal
from ._selectors import go_selector
from ._validation import FieldError, GoValue, path_segment_errors

__all__ = ["workload_errors", "workload_update_errors"]

JSONDict = dict[str, Any]

_NEGATIVE: Final = "must be greater than or equal to 0"
_ADDRESS: Final = "0xc000000000"
_PERCENT: Final = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE: Final = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _nonnegative(errors: list[FieldError], holder: JSONDict, key: str, path: str) -> None:
    value = holder.get(key)
    if _is_int(value) and value < 0:
        errors.append(FieldError(path, "FieldValueInvalid", _NEGATIVE, value))


def _pointer(type_name: str, present: bool) -> str:
    return f"(*{type_name})({_ADDRESS if present else 'nil'})"


def _go_string(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _int_or_string(value: Any) -> GoValue:
    if isinstance(value, str):
        return GoValue(f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_go_string(value)}}}")
    number = value if _is_int(value) else 0
    return GoValue(f'intstr.IntOrString{{Type:0, IntVal:{number}, StrVal:""}}')


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return None


def _int_or_percent_value(value: Any) -> int:
    """Go's getIntOrPercentValue: a percent's number, an int, a string's Atoi (or 0)."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if _is_int(value):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value):
        return int(value)
    return 0


def _positive_int_or_percent(errors: list[FieldError], value: Any, path: str) -> None:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            errors.append(
                FieldError(path, "FieldValueInvalid", _PERCENT_MESSAGE, _int_or_string(value))
            )
    elif _is_int(value) and value < 0:
        errors.append(FieldError(path, "FieldValueInvalid", _NEGATIVE, value))


def _not_over_100_percent(errors: list[FieldError], value: Any, path: str) -> None:
    percent = _percent(value)
    if percent is not None and percent > 100:
        errors.append(
            FieldError(
                path, "FieldValueInvalid", "must not be greater than 100%", _int_or_string(value)
            )
        )


def _supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def _restart_policy_always(errors: list[FieldError], spec: JSONDict, path: str, kind: str) -> None:
    pod_spec = _dict(spec.get("template")).get("spec")
    if not isinstance(pod_spec, dict):  # (no template: the PodSpec's checks say so)
        return
    policy = pod_spec.get("restartPolicy", "")
    if policy != "Always":
        errors.append(
            FieldError(
                f"{path}.template.spec.restartPolicy",
                "FieldValueNotSupported",
                _supported(("Always",)),
                policy,
            )
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            FieldError(
                f"{path}.template.spec.activeDeadlineSeconds",
                "FieldValueForbidden",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )


# -- apps ---------------------------------------------------------------------------


def _deployment_strategy(errors: list[FieldError], strategy: JSONDict, path: str) -> None:
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            errors.append(
                FieldError(
                    f"{path}.rollingUpdate",
                    "FieldValueForbidden",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            errors.append(
                FieldError(
                    f"{path}.rollingUpdate",
                    "FieldValueRequired",
                    "this should be defaulted and never be nil",
                )
            )
            return
        here = f"{path}.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        _positive_int_or_percent(errors, unavailable, f"{here}.maxUnavailable")
        _positive_int_or_percent(errors, surge, f"{here}.maxSurge")
        if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
            errors.append(
                FieldError(
                    f"{here}.maxUnavailable",
                    "FieldValueInvalid",
                    "may not be 0 when `maxSurge` is 0",
                    _int_or_string(unavailable),
                )
            )
        _not_over_100_percent(errors, unavailable, f"{here}.maxUnavailable")
    else:
        shown = (
            f"apps.DeploymentStrategy{{Type:{_go_string(kind)}, "
            f"RollingUpdate:{_pointer('apps.RollingUpdateDeployment', rolling is not None)}}}"
        )
        errors.append(
            FieldError(
                path,
                "FieldValueNotSupported",
                _supported(("Recreate", "RollingUpdate")),
                GoValue(shown),
            )
        )


def _deployment(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    _nonnegative(errors, spec, "replicas", "spec.replicas")
    _restart_policy_always(errors, spec, "spec", "ReplicaSet")
    _deployment_strategy(errors, _dict(spec.get("strategy")), "spec.strategy")
    _nonnegative(errors, spec, "minReadySeconds", "spec.minReadySeconds")
    _nonnegative(errors, spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if _is_int(deadline):
        _nonnegative(errors, spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds")
        ready = spec.get("minReadySeconds")
        if deadline <= (ready if _is_int(ready) else 0):
            errors.append(
                FieldError(
                    "spec.progressDeadlineSeconds",
                    "FieldValueInvalid",
                    "must be greater than minReadySeconds",
                    deadline,
                )
            )
    return errors


def _replica_set(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    _nonnegative(errors, spec, "replicas", "spec.replicas")
    _nonnegative(errors, spec, "minReadySeconds", "spec.minReadySeconds")
    _restart_policy_always(errors, spec, "spec", "ReplicaSet")
    return errors


def _replication_controller(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    _nonnegative(errors, spec, "minReadySeconds", "spec.minReadySeconds")
    _nonnegative(errors, spec, "replicas", "spec.replicas")
    _restart_policy_always(errors, spec, "spec", "ReplicationController")
    return errors


_RETENTION: Final = ("Retain", "Delete")


def _stateful_set(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    policy = spec.get("podManagementPolicy", "")
    if policy == "":
        errors.append(FieldError("spec.podManagementPolicy", "FieldValueRequired", ""))
    elif policy not in ("OrderedReady", "Parallel"):
        errors.append(
            FieldError(
                "spec.podManagementPolicy",
                "FieldValueInvalid",
                "must be 'OrderedReady' or 'Parallel'",
                policy,
            )
        )
    strategy = _dict(spec.get("updateStrategy"))
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    if kind == "":
        errors.append(FieldError("spec.updateStrategy", "FieldValueRequired", ""))
    elif kind == "OnDelete":
        if rolling is not None:
            errors.append(
                FieldError(
                    "spec.updateStrategy.rollingUpdate",
                    "FieldValueInvalid",
                    "only allowed for updateStrategy 'RollingUpdate'",
                    GoValue(_stateful_rolling_update(_dict(rolling))),
                )
            )
    elif kind == "RollingUpdate":
        if isinstance(rolling, dict):
            _nonnegative(
                errors, rolling, "partition", "spec.updateStrategy.rollingUpdate.partition"
            )
    else:
        shown = (
            f"apps.StatefulSetUpdateStrategy{{Type:{_go_string(kind)}, RollingUpdate:"
            f"{_pointer('apps.RollingUpdateStatefulSetStrategy', rolling is not None)}}}"
        )
        errors.append(
            FieldError(
                "spec.updateStrategy",
                "FieldValueInvalid",
                "must be 'RollingUpdate' or 'OnDelete'",
                GoValue(shown),
            )
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = retention.get(key, "")
            if value not in _RETENTION:
                errors.append(
                    FieldError(
                        f"spec.persistentVolumeClaimRetentionPolicy.{key}",
                        "FieldValueNotSupported",
                        _supported(_RETENTION),
                        value,
                    )
                )
    _nonnegative(errors, spec, "replicas", "spec.replicas")
    _nonnegative(errors, spec, "minReadySeconds", "spec.minReadySeconds")
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        _nonnegative(errors, ordinals, "start", "spec.ordinals.start")
    _restart_policy_always(errors, spec, "spec", "StatefulSet")
    return errors


def _stateful_rolling_update(rolling: JSONDict) -> str:
    partition = rolling.get("partition")
    unavailable = rolling.get("maxUnavailable") is not None
    return (
        f"apps.RollingUpdateStatefulSetStrategy{{Partition:"
        f"{partition if _is_int(partition) else 0}, "
        f"MaxUnavailable:{_pointer('intstr.IntOrString', unavailable)}}}"
    )


def _daemon_set(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    _restart_policy_always(errors, spec, "spec", "DaemonSet")
    _nonnegative(errors, spec, "minReadySeconds", "spec.minReadySeconds")
    strategy = _dict(spec.get("updateStrategy"))
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    path = "spec.updateStrategy"
    if kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            errors.append(FieldError(f"{path}.rollingUpdate", "FieldValueRequired", ""))
        else:
            here = f"{path}.rollingUpdate"
            unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
            _positive_int_or_percent(errors, unavailable, f"{here}.maxUnavailable")
            _positive_int_or_percent(errors, surge, f"{here}.maxSurge")
            _not_over_100_percent(errors, unavailable, f"{here}.maxUnavailable")
            _not_over_100_percent(errors, surge, f"{here}.maxSurge")
            has_unavailable = _int_or_percent_value(unavailable) != 0
            has_surge = _int_or_percent_value(surge) != 0
            if has_unavailable and has_surge:
                errors.append(
                    FieldError(
                        f"{here}.maxSurge",
                        "FieldValueInvalid",
                        "may not be set when maxUnavailable is non-zero",
                        _int_or_string(surge),
                    )
                )
            elif not has_unavailable and not has_surge:
                errors.append(
                    FieldError(
                        f"{here}.maxUnavailable",
                        "FieldValueRequired",
                        "cannot be 0 when maxSurge is 0",
                    )
                )
    elif kind != "OnDelete":
        shown = (
            f"apps.DaemonSetUpdateStrategy{{Type:{_go_string(kind)}, RollingUpdate:"
            f"{_pointer('apps.RollingUpdateDaemonSet', rolling is not None)}}}"
        )
        errors.append(
            FieldError(
                path,
                "FieldValueNotSupported",
                _supported(("RollingUpdate", "OnDelete")),
                GoValue(shown),
            )
        )
    _nonnegative(errors, spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")
    return errors


# -- batch --------------------------------------------------------------------------

_INDEXED_LIMIT: Final = 100_000
_FAILURE_ACTIONS: Final = ("Count", "FailIndex", "FailJob", "Ignore")


def _job_spec(spec: JSONDict, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ):
        _nonnegative(errors, spec, key, f"{path}.{key}")
    mode = spec.get("completionMode")
    indexed = mode == "Indexed"
    per_index = spec.get("backoffLimitPerIndex")
    max_failed = spec.get("maxFailedIndexes")
    if max_failed is not None:
        _nonnegative(errors, spec, "maxFailedIndexes", f"{path}.maxFailedIndexes")
        if per_index is None:
            errors.append(
                FieldError(
                    f"{path}.backoffLimitPerIndex",
                    "FieldValueRequired",
                    "when maxFailedIndexes is specified",
                )
            )
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errors.append(
                FieldError(
                    f"{path}.completionMode",
                    "FieldValueNotSupported",
                    _supported(("NonIndexed", "Indexed")),
                    mode,
                )
            )
        if indexed:
            completions, parallelism = spec.get("completions"), spec.get("parallelism")
            if completions is None:
                errors.append(
                    FieldError(
                        f"{path}.completions",
                        "FieldValueRequired",
                        "when completion mode is Indexed",
                    )
                )
            if _is_int(parallelism) and parallelism > _INDEXED_LIMIT:
                errors.append(
                    FieldError(
                        f"{path}.parallelism",
                        "FieldValueInvalid",
                        f"must be less than or equal to {_INDEXED_LIMIT} when completion mode "
                        "is Indexed",
                        parallelism,
                    )
                )
            if _is_int(completions) and _is_int(max_failed) and max_failed > completions:
                errors.append(
                    FieldError(
                        f"{path}.maxFailedIndexes",
                        "FieldValueInvalid",
                        "must be less than or equal to completions",
                        max_failed,
                    )
                )
            if _is_int(max_failed) and max_failed > _INDEXED_LIMIT:
                errors.append(
                    FieldError(
                        f"{path}.maxFailedIndexes",
                        "FieldValueInvalid",
                        f"must be less than or equal to {_INDEXED_LIMIT}",
                        max_failed,
                    )
                )
    if mode in (None, "NonIndexed"):
        for key, value in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)):
            if value is not None:
                errors.append(
                    FieldError(
                        f"{path}.{key}",
                        "FieldValueInvalid",
                        "requires indexed completion mode",
                        value,
                    )
                )
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        errors += _pod_failure_policy(spec, failure_policy, f"{path}.podFailurePolicy")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if failure_policy is not None:
            if replacement != "Failed":
                errors.append(
                    FieldError(
                        f"{path}.podReplacementPolicy",
                        "FieldValueNotSupported",
                        _supported(("Failed",)),
                        replacement,
                    )
                )
        elif replacement not in ("Failed", "TerminatingOrFailed"):
            errors.append(
                FieldError(
                    f"{path}.podReplacementPolicy",
                    "FieldValueNotSupported",
                    _supported(("Failed", "TerminatingOrFailed")),
                    replacement,
                )
            )
    pod_spec = _dict(spec.get("template")).get("spec")
    restart = pod_spec.get("restartPolicy", "") if isinstance(pod_spec, dict) else None
    if restart is None:  # (no template: the PodSpec's checks say so)
        pass
    elif restart in ("Always", ""):
        errors.append(
            FieldError(
                f"{path}.template.spec.restartPolicy",
                "FieldValueRequired",
                'valid values: "OnFailure", "Never"',
            )
        )
    elif restart not in ("OnFailure", "Never"):
        errors.append(
            FieldError(
                f"{path}.template.spec.restartPolicy",
                "FieldValueNotSupported",
                _supported(("OnFailure", "Never")),
                restart,
            )
        )
    elif failure_policy is not None and restart != "Never":
        errors.append(
            FieldError(
                f"{path}.template.spec.restartPolicy",
                "FieldValueInvalid",
                'only "Never" is supported when podFailurePolicy is specified',
                restart,
            )
        )
    return errors


def _pod_failure_policy(spec: JSONDict, policy: JSONDict, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    rules = policy.get("rules")
    rules = rules if isinstance(rules, list) else []
    for index, rule in enumerate(rules):
        rule = _dict(rule)
        here = f"{path}.rules[{index}]"
        action = rule.get("action", "")
        if action == "":
            errors.append(
                FieldError(
                    f"{here}.action",
                    "FieldValueRequired",
                    "valid values: [" + " ".join(f'"{a}"' for a in _FAILURE_ACTIONS) + "]",
                )
            )
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errors.append(
                    FieldError(
                        f"{here}.action",
                        "FieldValueInvalid",
                        "requires the backoffLimitPerIndex to be set",
                        action,
                    )
                )
        elif action not in _FAILURE_ACTIONS:
            errors.append(
                FieldError(
                    f"{here}.action", "FieldValueNotSupported", _supported(_FAILURE_ACTIONS), action
                )
            )
        exit_codes = rule.get("onExitCodes")
        conditions = rule.get("onPodConditions")
        if exit_codes is not None and conditions:
            errors.append(
                _Omitted(
                    here,
                    "FieldValueInvalid",
                    "specifying both OnExitCodes and OnPodConditions is not supported",
                )
            )
        elif exit_codes is None and not conditions:
            errors.append(
                _Omitted(
                    here,
                    "FieldValueInvalid",
                    "specifying one of OnExitCodes and OnPodConditions is required",
                )
            )
    return errors


def _job(spec: JSONDict) -> list[FieldError]:
    return _job_spec(spec, "spec")


_CONCURRENCY: Final = ("Allow", "Forbid", "Replace")


def _cron_job(spec: JSONDict, name: str, old_spec: JSONDict | None) -> list[FieldError]:
    errors: list[FieldError] = []
    schedule = spec.get("schedule", "")
    time_zone = spec.get("timeZone")
    old_schedule = old_spec.get("schedule") if old_spec is not None else None
    allow_tz = isinstance(old_schedule, str) and "TZ" in old_schedule
    if not schedule:
        errors.append(FieldError("spec.schedule", "FieldValueRequired", ""))
    elif isinstance(schedule, str):
        problem = schedule_error(schedule)
        if problem is not None:
            errors.append(FieldError("spec.schedule", "FieldValueInvalid", problem, schedule))
        if "TZ" in schedule:
            if allow_tz and time_zone is not None:
                errors.append(
                    FieldError(
                        "spec.schedule",
                        "FieldValueInvalid",
                        "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                        schedule,
                    )
                )
            elif not allow_tz:
                errors.append(
                    FieldError(
                        "spec.schedule",
                        "FieldValueInvalid",
                        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                        schedule,
                    )
                )
    _nonnegative(errors, spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds")
    changed_zone = old_spec is None or old_spec.get("timeZone") != time_zone
    if isinstance(time_zone, str) and changed_zone:
        errors += _time_zone_errors(time_zone)
    policy = spec.get("concurrencyPolicy", "")
    if policy == "":
        errors.append(FieldError("spec.concurrencyPolicy", "FieldValueRequired", ""))
    elif policy not in _CONCURRENCY:
        errors.append(
            FieldError(
                "spec.concurrencyPolicy",
                "FieldValueNotSupported",
                _supported(_CONCURRENCY),
                policy,
            )
        )
    job_spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
    errors += _job_spec(job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        errors.append(
            FieldError(
                "spec.jobTemplate.spec.selector",
                "FieldValueInvalid",
                "`selector` will be auto-generated",
                go_selector(job_spec["selector"]),
            )
        )
    if job_spec.get("manualSelector") is True:
        errors.append(
            FieldError(
                "spec.jobTemplate.spec.manualSelector",
                "FieldValueNotSupported",
                _supported(("nil", "false")),
                True,
            )
        )
    _nonnegative(errors, spec, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit")
    _nonnegative(errors, spec, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit")
    if old_spec is None and len(name) > 52:
        errors.append(
            FieldError(
                "metadata.name", "FieldValueInvalid", "must be no more than 52 characters", name
            )
        )
    return errors


_TIME_ZONE_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _time_zone_errors(zone: str) -> list[FieldError]:
    path = "spec.timeZone"
    if zone == "":
        return [
            FieldError(path, "FieldValueInvalid", "timeZone must be nil or non-empty string", zone)
        ]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [FieldError(path, "FieldValueInvalid", f"unknown time zone {zone}", zone)]
    errors: list[FieldError] = []
    if zone.lower() == "local":
        errors.append(
            FieldError(
                path,
                "FieldValueInvalid",
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
                zone,
            )
        )
    if not _known_zone(zone):
        errors.append(FieldError(path, "FieldValueInvalid", f"unknown time zone {zone}", zone))
    return errors


def _known_zone(zone: str) -> bool:
    """Whether Go's ``time.LoadLocation`` finds ``zone`` ("UTC" and "Local" always)."""
    if zone in ("UTC", "Local"):
        return True
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


# -- the cron schedule (robfig/cron v3, ParseStandard) --------------------------------

_MONTHS: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DAYS: Final = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}
#: The five fields' bounds and names, in order.
_FIELDS: Final[tuple[tuple[int, int, dict[str, int]], ...]] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)


class _Omitted(FieldError):
    """A field error whose value Go omits (``field.OmitValueType``)."""

    def message(self) -> str:
        return f"{self.field}: Invalid value: {self.detail}"


class _CronError(ValueError):
    pass


def _go_atoi(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise _CronError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise _CronError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def _must_parse_int(text: str) -> int:
    try:
        number = _go_atoi(text)
    except _CronError as error:
        raise _CronError(f"failed to parse int from {text}: {error}") from None
    if number < 0:
        raise _CronError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, names: dict[str, int]) -> int:
    if names and text.lower() in names:
        return names[text.lower()]
    return _must_parse_int(text)


def _cron_range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise _CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:
            end = high
    else:
        raise _CronError(f"too many slashes: {expr}")
    if start < low:
        raise _CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise _CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise _CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _CronError(f"step of range should be a positive number: {expr}")


_DURATION_UNITS: Final = ("ns", "us", "µs", "μs", "ms", "s", "m", "h")
_DURATION_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def _duration_error(text: str) -> str | None:
    """Go's ``time.ParseDuration`` refusal of ``text``, or None."""
    quoted = '"' + text + '"'
    rest = text
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return None
    if rest == "":
        return f"time: invalid duration {quoted}"
    while rest:
        match = _DURATION_PART.match(rest)
        number, unit = (match.group(1), match.group(2)) if match else ("", "")
        if number in ("", ".") or not re.fullmatch(r"[0-9]*(\.[0-9]*)?", number):
            return f"time: invalid duration {quoted}"
        if unit == "":
            return f"time: missing unit in duration {quoted}"
        known = next((u for u in _DURATION_UNITS if unit.startswith(u)), None)
        # Go reads the unit up to the next digit or '.': it must be exactly a unit.
        if known is None or known != unit:
            return f'time: unknown unit "{unit}" in duration {quoted}'
        rest = rest[len(number) + len(unit) :]
    return None


def schedule_error(schedule: str) -> str | None:
    """What robfig/cron v3's ``ParseStandard`` (1.30's parser) says of ``schedule``."""
    spec = schedule
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        space = spec.find(" ")
        equals = spec.find("=")
        zone = spec[equals + 1 : space] if space >= 0 else spec[equals + 1 : -1]
        if space < 0 or not (zone in ("", "UTC", "Local") or _zone_loads(zone)):
            return f"provided bad location {zone}: unknown time zone {zone}"
        spec = spec[space:].strip()
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            problem = _duration_error(spec[len("@every ") :])
            if problem is not None:
                return f"failed to parse duration {spec}: {problem}"
            return None
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for text, (low, high, names) in zip(fields, _FIELDS, strict=True):
            for expr in (part for part in text.split(",") if part):  # (Go's FieldsFunc)
                _cron_range(expr, low, high, names)
    except _CronError as error:
        return str(error)
    return None


def _zone_loads(zone: str) -> bool:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


# -- autoscaling ----------------------------------------------------------------------

_METRIC_TYPES: Final = ("ContainerResource", "External", "Object", "Pods", "Resource")
_METRIC_FIELDS: Final = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}


def _scale_target(errors: list[FieldError], ref: JSONDict, path: str) -> None:
    for key in ("kind", "name"):
        value = ref.get(key, "")
        if not value:
            errors.append(FieldError(f"{path}.{key}", "FieldValueRequired", ""))
        elif isinstance(value, str):
            errors += [
                FieldError(f"{path}.{key}", "FieldValueInvalid", message, value)
                for message in path_segment_errors(value)
            ]


def _quantity_sign(value: Any) -> int:
    text = str(value).strip()
    if text.startswith("-"):
        return -1 if re.search(r"[1-9]", text.split("e")[0].split("E")[0]) else 0
    return 1 if re.search(r"[1-9]", re.sub(r"[eE].*$", "", text)) else 0


def _metric_target(errors: list[FieldError], target: JSONDict, path: str) -> None:
    kind = target.get("type", "")
    if kind == "":
        errors.append(
            FieldError(f"{path}.type", "FieldValueRequired", "must specify a metric target type")
        )
    if kind not in ("Utilization", "Value", "AverageValue"):
        errors.append(
            FieldError(
                f"{path}.type",
                "FieldValueInvalid",
                "must be either Utilization, Value, or AverageValue",
                kind,
            )
        )
    for key in ("value", "averageValue"):
        value = target.get(key)
        if value is not None and _quantity_sign(value) != 1:
            errors.append(
                FieldError(f"{path}.{key}", "FieldValueInvalid", "must be positive", value)
            )
    utilization = target.get("averageUtilization")
    if _is_int(utilization) and utilization < 1:
        errors.append(
            FieldError(
                f"{path}.averageUtilization",
                "FieldValueInvalid",
                "must be greater than 0",
                utilization,
            )
        )


def _resource_metric(errors: list[FieldError], source: JSONDict, path: str) -> None:
    if not source.get("name"):
        errors.append(
            FieldError(f"{path}.name", "FieldValueRequired", "must specify a resource name")
        )
    target = _dict(source.get("target"))
    _metric_target(errors, target, f"{path}.target")
    utilization, average = target.get("averageUtilization"), target.get("averageValue")
    if utilization is None and average is None:
        errors.append(
            FieldError(
                f"{path}.target.averageUtilization",
                "FieldValueRequired",
                "must set either a target raw value or a target utilization",
            )
        )
    if utilization is not None and average is not None:
        errors.append(
            FieldError(
                f"{path}.target.averageValue",
                "FieldValueForbidden",
                "may not set both a target raw value and a target utilization",
            )
        )


def _metric(errors: list[FieldError], metric: JSONDict, path: str) -> None:
    kind = metric.get("type", "")
    if kind == "":
        errors.append(
            FieldError(f"{path}.type", "FieldValueRequired", "must specify a metric source type")
        )
    if kind not in _METRIC_TYPES:
        errors.append(
            FieldError(f"{path}.type", "FieldValueNotSupported", _supported(_METRIC_TYPES), kind)
        )
    present = [field for field in _METRIC_FIELDS.values() if metric.get(field) is not None]
    if len(present) >= 1 and present[0] in ("resource", "containerResource"):
        _resource_metric(errors, _dict(metric.get(present[0])), f"{path}.{present[0]}")
    expected = _METRIC_FIELDS.get(kind)
    if expected is None:  # (the source switch's default says it again)
        errors.append(
            FieldError(f"{path}.type", "FieldValueNotSupported", _supported(_METRIC_TYPES), kind)
        )
    elif metric.get(expected) is None:
        errors.append(
            FieldError(
                f"{path}.{expected}",
                "FieldValueRequired",
                "must populate information for the given metric source",
            )
        )
    if len(present) != 1:
        for field in present:
            if field != expected:
                errors.append(
                    FieldError(
                        f"{path}.{field}",
                        "FieldValueForbidden",
                        "must populate the given metric source only",
                    )
                )


def _hpa(spec: JSONDict, v1_shape: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    maximum = maximum if _is_int(maximum) else 0
    if _is_int(minimum) and minimum < 1:
        errors.append(
            FieldError(
                "spec.minReplicas",
                "FieldValueInvalid",
                "must be greater than or equal to 1",
                minimum,
            )
        )
    if maximum < 1:
        errors.append(
            FieldError("spec.maxReplicas", "FieldValueInvalid", "must be greater than 0", maximum)
        )
    if _is_int(minimum) and maximum < minimum:
        errors.append(
            FieldError(
                "spec.maxReplicas",
                "FieldValueInvalid",
                "must be greater than or equal to `minReplicas`",
                maximum,
            )
        )
    ref_errors: list[FieldError] = []
    _scale_target(ref_errors, _dict(spec.get("scaleTargetRef")), "spec.scaleTargetRef")
    if ref_errors:
        return errors + ref_errors
    scale_to_zero = FieldError(
        "spec.metrics",
        "FieldValueForbidden",
        "must specify at least one Object or External metric to support scaling to zero replicas",
    )
    if v1_shape:  # (converted to one Resource metric on cpu)
        percent = spec.get("targetCPUUtilizationPercentage")
        if _is_int(percent) and percent < 1:
            errors.append(
                FieldError(
                    "spec.metrics[0].resource.target.averageUtilization",
                    "FieldValueInvalid",
                    "must be greater than 0",
                    percent,
                )
            )
        if minimum == 0:
            errors.append(scale_to_zero)
        return errors
    metrics = spec.get("metrics")
    metrics = metrics if isinstance(metrics, list) else []
    for index, metric in enumerate(metrics):
        _metric(errors, _dict(metric), f"spec.metrics[{index}]")
    scales_on_objects = any(
        _dict(metric).get("type") in ("Object", "External") for metric in metrics
    )
    if minimum == 0 and not scales_on_objects:
        errors.append(scale_to_zero)
    return errors


# -- policy ---------------------------------------------------------------------------

_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def _pdb(spec: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    if minimum is not None and maximum is not None:
        policy = spec.get("unhealthyPodEvictionPolicy") is not None
        shown = (
            f"policy.PodDisruptionBudgetSpec{{MinAvailable:{_pointer('intstr.IntOrString', True)}, "
            f"Selector:{_pointer('v1.LabelSelector', spec.get('selector') is not None)}, "
            f"MaxUnavailable:{_pointer('intstr.IntOrString', True)}, "
            f"UnhealthyPodEvictionPolicy:"
            f"{_pointer('policy.UnhealthyPodEvictionPolicyType', policy)}}}"
        )
        errors.append(
            FieldError(
                "spec",
                "FieldValueInvalid",
                "minAvailable and maxUnavailable cannot be both set",
                GoValue(shown),
            )
        )
    for key, value in (("minAvailable", minimum), ("maxUnavailable", maximum)):
        if value is not None:
            _positive_int_or_percent(errors, value, f"spec.{key}")
            _not_over_100_percent(errors, value, f"spec.{key}")
    policy_value = spec.get("unhealthyPodEvictionPolicy")
    if policy_value is not None and policy_value not in _EVICTION_POLICIES:
        errors.append(
            FieldError(
                "spec.unhealthyPodEvictionPolicy",
                "FieldValueNotSupported",
                _supported(_EVICTION_POLICIES),
                policy_value,
            )
        )
    return errors


# -- entry points ---------------------------------------------------------------------

_CHECKS: Final[dict[tuple[str, str], Callable[[JSONDict], list[FieldError]]]] = {
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("", "replicationcontrollers"): _replication_controller,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("batch", "jobs"): _job,
    ("policy", "poddisruptionbudgets"): _pdb,
}


def _spec_errors(
    group: str, resource: str, body: JSONDict, old_spec: JSONDict | None
) -> list[FieldError]:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        # Serve keeps an object without a spec (a real server defaults one and then
        # refuses its missing selector and template, which are checked elsewhere).
        return []
    if (group, resource) == ("batch", "cronjobs"):
        name = _dict(body.get("metadata")).get("name", "")
        return _cron_job(spec, name if isinstance(name, str) else "", old_spec)
    if (group, resource) == ("autoscaling", "horizontalpodautoscalers"):
        v1_shape = body.get("apiVersion") == "autoscaling/v1" or (
            "targetCPUUtilizationPercentage" in spec and "metrics" not in spec
        )
        return _hpa(spec, v1_shape)
    check = _CHECKS.get((group, resource))
    return check(spec) if check is not None else []


def workload_errors(group: str, resource: str, body: Any) -> list[FieldError]:
    """A create's refusals of a workload kind's spec (a defaulted body)."""
    if not isinstance(body, dict):
        return []
    return _spec_errors(group, resource, body, None)


def _immutable(errors: list[FieldError], path: str, new: Any, old: Any, shown: Any) -> None:
    if not json_equal(new, old):
        errors.append(FieldError(path, "FieldValueInvalid", "field is immutable", shown))


_STATEFUL_SET_MUTABLE: Final = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
#: A suspended Job that never started may change these of its template (1.27+).
_SCHEDULING_DIRECTIVES: Final = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _job_template_changed(spec: JSONDict, old_spec: JSONDict, old: JSONDict) -> bool:
    new_template, old_template = _dict(spec.get("template")), _dict(old_spec.get("template"))
    if json_equal(new_template, old_template):
        return False
    started = _dict(old.get("status")).get("startTime") is not None
    if old_spec.get("suspend") is not True or started:
        return True

    # labels, annotations and the scheduling directives may change; nothing else
    def rest(template: JSONDict) -> JSONDict:
        meta = {
            k: v
            for k, v in _dict(template.get("metadata")).items()
            if k not in ("labels", "annotations")
        }
        pod = {
            k: v for k, v in _dict(template.get("spec")).items() if k not in _SCHEDULING_DIRECTIVES
        }
        return {**template, "metadata": meta, "spec": pod}

    return not json_equal(rest(new_template), rest(old_template))


def workload_update_errors(group: str, resource: str, body: Any, existing: Any) -> list[FieldError]:
    """An update's refusals: the spec's rules again, and the fields it may not change."""
    if not isinstance(body, dict) or not isinstance(existing, dict):
        return []
    spec, old_spec = _dict(body.get("spec")), _dict(existing.get("spec"))
    if json_equal(body.get("spec"), existing.get("spec")):
        # An update that leaves the spec as stored passes: an object loaded from
        # elsewhere (``load`` skips these checks) stays writable, its finalizers and
        # owner references too. (A real server would refuse it; it never stores one.)
        return []
    errors = _spec_errors(group, resource, body, old_spec)
    if (group, resource) == ("batch", "jobs"):
        # The Job strategy validates the new Job, then the update, which validates the
        # spec again: each of its errors is listed twice.
        errors += errors
    if (group, resource) == ("apps", "statefulsets"):
        kept = {k: v for k, v in spec.items() if k not in _STATEFUL_SET_MUTABLE}
        old_kept = {k: v for k, v in old_spec.items() if k not in _STATEFUL_SET_MUTABLE}
        if not json_equal(kept, old_kept):
            errors.append(
                FieldError(
                    "spec",
                    "FieldValueForbidden",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
    elif (group, resource) == ("batch", "jobs"):
        completions, old_completions = spec.get("completions"), old_spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        if not json_equal(completions, old_completions):
            if not indexed:
                errors.append(
                    FieldError(
                        "spec.completions", "FieldValueInvalid", "field is immutable", completions
                    )
                )
            elif completions is not None and completions != spec.get("parallelism"):
                errors.append(
                    FieldError(
                        "spec.completions",
                        "FieldValueInvalid",
                        "can only be modified in tandem with spec.parallelism",
                        completions,
                    )
                )
        if _job_template_changed(spec, old_spec, existing):
            errors.append(
                FieldError(
                    "spec.template",
                    "FieldValueInvalid",
                    "field is immutable",
                    GoValue("core.PodTemplateSpec{...}"),
                )
            )
        for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
            new_value, old_value = spec.get(key), old_spec.get(key)
            shown = (
                new_value if not isinstance(new_value, dict) else GoValue(f"&batch.{key}{{...}}")
            )
            _immutable(errors, f"spec.{key}", new_value, old_value, shown)
    return errors
