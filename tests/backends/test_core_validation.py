"""Unit checks of ``_core_validation`` beyond the recorded replay
(tests/facade/test_core_validation_real.py): Go's JSON words, updates that keep
a field a real server clears on a type change, and the rules' field paths."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from ownergc_backends.memory._core_validation import (
    _go_json_error,
    core_spec_errors,
    core_spec_update_errors,
)


def _messages(errors: list[Any]) -> list[str]:
    return [e.message() for e in errors]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"auths":{}}', None),
        (b"null", None),
        (b"", "unexpected end of JSON input"),
        (b"   ", "unexpected end of JSON input"),
        (b'{"a":', "unexpected end of JSON input"),
        (b"notjson", "invalid character 'o' in literal null (expecting 'u')"),
        (b"{x", "invalid character 'x' looking for beginning of object key string"),
        (b"x", "invalid character 'x' looking for beginning of value"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b"}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"{} {}", "invalid character '{' after top-level value"),
        (b"-x", "invalid character 'x' in numeric literal"),
        (b"1.x", "invalid character 'x' after decimal point in numeric literal"),
        (b'"\\q"', "invalid character 'q' in string escape code"),
        (b"[]", "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        (b"1", "json: cannot unmarshal number into Go value of type map[string]interface {}"),
        (b'"s"', "json: cannot unmarshal string into Go value of type map[string]interface {}"),
        (b"true", "json: cannot unmarshal bool into Go value of type map[string]interface {}"),
    ],
)
def test_go_json_words(raw: bytes, words: str | None) -> None:
    assert _go_json_error(raw) == words


def _service(**spec: Any) -> dict[str, Any]:
    base = {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
    }
    return {"metadata": {"name": "s"}, "spec": {**base, **spec}}


def test_a_valid_service_passes() -> None:
    assert core_spec_errors("", "services", _service()) == []


def test_other_groups_and_kinds_are_not_checked() -> None:
    assert core_spec_errors("apps", "services", {"spec": {"type": "Bogus"}}) == []
    assert core_spec_errors("", "pods", {"spec": {"type": "Bogus"}}) == []


def test_an_update_to_clusterip_keeps_fields_a_real_server_clears() -> None:
    """A NodePort Service turned ClusterIP keeps its externalTrafficPolicy in the body
    (a real server clears what the update left as it was): not refused."""
    old = _service(type="NodePort", externalTrafficPolicy="Cluster")
    new = _service(externalTrafficPolicy="Cluster")
    assert core_spec_update_errors("", "services", new, old) == []
    # set anew on a ClusterIP Service, it is refused
    assert _messages(core_spec_update_errors("", "services", new, _service())) == [
        'spec.externalTrafficPolicy: Invalid value: "Cluster": may only be set for '
        "externally-accessible services"
    ]


def test_cluster_ip_lists_are_shown_as_go_shows_them() -> None:
    body = _service(clusterIP="10.96.0.5", clusterIPs=["10.96.0.6", "10.96.0.7"])
    assert _messages(core_spec_errors("", "services", body)) == [
        'spec.clusterIPs: Invalid value: []string{"10.96.0.6", "10.96.0.7"}: element [0] '
        "must match clusterIP",
        'spec.clusterIPs: Invalid value: []string{"10.96.0.6", "10.96.0.7"}: may specify no '
        "more than one IP for each IP family",
    ]


def test_an_immutable_configmap_may_be_relabelled_but_not_refilled() -> None:
    old = {"metadata": {"name": "c"}, "immutable": True, "data": {"a": "b"}}
    relabelled = {**old, "metadata": {"name": "c", "labels": {"x": "y"}}}
    assert core_spec_update_errors("", "configmaps", relabelled, old) == []
    refilled = {**old, "data": {"a": "c"}, "immutable": False}
    assert _messages(core_spec_update_errors("", "configmaps", refilled, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


def test_secret_sizes_count_decoded_bytes() -> None:
    value = base64.b64encode(b"x" * (1024 * 1024)).decode()
    assert core_spec_errors("", "secrets", {"type": "Opaque", "data": {"k": value}}) == []
    value = base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()
    assert _messages(core_spec_errors("", "secrets", {"type": "Opaque", "data": {"k": value}})) == [
        "data: Too long: must have at most 1048576 bytes"
    ]


def test_endpoint_addresses_in_ipv6_and_sloppy_ipv4() -> None:
    body = {
        "subsets": [
            {
                "addresses": [{"ip": "fd00::1"}, {"ip": "010.001.002.003"}, {"ip": "::1"}],
                "ports": [{"port": 80, "protocol": "TCP"}],
            }
        ]
    }
    assert _messages(core_spec_errors("", "endpoints", body)) == [
        'subsets[0].addresses[2].ip: Invalid value: "::1": may not be in the loopback range '
        "(127.0.0.0/8)"
    ]


def test_an_update_to_externalname_keeps_the_cluster_ip_fields() -> None:
    old = _service(clusterIP="10.96.0.9", clusterIPs=["10.96.0.9"], ipFamilies=["IPv4"])
    old["spec"]["ipFamilyPolicy"] = "SingleStack"
    new = {"metadata": {"name": "s"}, "spec": {**old["spec"], "type": "ExternalName"}}
    new["spec"]["externalName"] = "example.com"
    assert core_spec_update_errors("", "services", new, old) == []
    assert _messages(core_spec_errors("", "services", new)) == [
        "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
        "spec.ipFamilies: Forbidden: may not be set for ExternalName services",
        "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
    ]
