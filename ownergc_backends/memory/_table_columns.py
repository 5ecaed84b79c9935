"""The column definitions of kube-apiserver v1.30's printers for the kinds below.

Names, types, formats and priorities are the server's (priority 1 is what ``kubectl get -o
wide`` adds); a description that the server takes from a field's API documentation is that
field's description in the facade's OpenAPI document. ``_tables`` pairs each list with the
function computing its cells.
"""

from __future__ import annotations

from ownergc.protocols import JSONDict


def _column(
    name: str, description: str, *, type_: str = "string", fmt: str = "", priority: int = 0
) -> JSONDict:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _column(
    "Name",
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "http://kubernetes.io/docs/user-guide/identifiers#names",
    fmt="name",
)
_CREATION_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_AGE = _column("Age", _CREATION_DOC)
#: The generic columns of a kind without a printer of its own (apiserver's default table
#: convertor): the name and the creation time as an RFC 3339 date.
_CREATED_AT = _column("Created At", _CREATION_DOC, type_="date")
_WIDE_CONTAINERS = _column("Containers", "Names of each container in the template.", priority=1)
_WIDE_IMAGES = _column("Images", "Images referenced by each container in the template.", priority=1)

_JOB_COLUMNS = [
    _NAME,
    _column("Status", "Status of the job."),
    _column("Completions", "The number of pods which reached phase Succeeded."),
    _column("Duration", "Time required to complete the job."),
    _AGE,
    _WIDE_CONTAINERS,
    _WIDE_IMAGES,
    _column(
        "Selector",
        "A label query over pods that should match the pod count. Normally, the system sets "
        "this field for you. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority=1,
    ),
]
_CRONJOB_COLUMNS = [
    _NAME,
    _column("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    _column(
        "Timezone",
        "The time zone name for the given schedule, see "
        "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this "
        "will default to the time zone of the kube-controller-manager process.",
    ),
    _column(
        "Suspend",
        "This flag tells the controller to suspend subsequent executions, it does not apply to "
        "already started executions.  Defaults to false.",
        type_="boolean",
    ),
    _column("Active", "A list of pointers to currently running jobs.", type_="integer"),
    _column(
        "Last Schedule",
        "Information when was the last time the job was successfully scheduled.",
    ),
    _AGE,
    _WIDE_CONTAINERS,
    _WIDE_IMAGES,
    _column(
        "Selector",
        "A label query over pods that should match the pod count. Normally, the system sets "
        "this field for you. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority=1,
    ),
]
_STATEFULSET_COLUMNS = [
    _NAME,
    _column("Ready", "Number of the pod with ready state"),
    _AGE,
    _WIDE_CONTAINERS,
    _WIDE_IMAGES,
]
_DAEMONSET_COLUMNS = [
    _NAME,
    _column(
        "Desired",
        "The total number of nodes that should be running the daemon pod (including nodes "
        "correctly running the daemon pod). More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        type_="integer",
    ),
    _column(
        "Current",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run "
        "the daemon pod. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        type_="integer",
    ),
    _column(
        "Ready",
        "numberReady is the number of nodes that should be running the daemon pod and have one "
        "or more of the daemon pod running with a Ready Condition.",
        type_="integer",
    ),
    _column(
        "Up-to-date",
        "The total number of nodes that are running updated daemon pod",
        type_="integer",
    ),
    _column(
        "Available",
        "The number of nodes that should be running the daemon pod and have one or more of the "
        "daemon pod running and available (ready for at least spec.minReadySeconds)",
        type_="integer",
    ),
    _column(
        "Node Selector",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector "
        "which must match a node's labels for the pod to be scheduled on that node. More info: "
        "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    _AGE,
    _WIDE_CONTAINERS,
    _WIDE_IMAGES,
    _column(
        "Selector",
        "A label query over pods that are managed by the daemon set. Must match in order to be "
        "controlled. It must match the pod template's labels. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority=1,
    ),
]
_CONTROLLER_REVISION_COLUMNS = [
    _NAME,
    _column("Controller", "Controller of the object"),
    _column("Revision", "Revision indicates the revision of the state represented by Data."),
    _AGE,
]
_REPLICATION_CONTROLLER_COLUMNS = [
    _NAME,
    _column(
        "Desired",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between "
        "explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        type_="integer",
    ),
    _column(
        "Current",
        "Replicas is the most recently oberved number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        type_="integer",
    ),
    _column(
        "Ready",
        "The number of ready replicas for this replication controller.",
        type_="integer",
    ),
    _AGE,
    _WIDE_CONTAINERS,
    _WIDE_IMAGES,
    _column(
        "Selector",
        "Selector is a label query over pods that should match the Replicas count. If Selector "
        "is empty, it is defaulted to the labels present on the Pod template. Label keys and "
        "values that must match in order to be controlled by this replication controller, if "
        "empty defaulted to labels on Pod template. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority=1,
    ),
]
_PDB_COLUMNS = [
    _NAME,
    _column("Min Available", "The minimum number of pods that must be available."),
    _column("Max Unavailable", "The maximum number of pods that may be unavailable."),
    _column(
        "Allowed Disruptions",
        "Calculated number of pods that may be disrupted at this time.",
        type_="integer",
    ),
    _AGE,
]
_INGRESS_COLUMNS = [
    _NAME,
    _column(
        "Class",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    _column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
    _column("Address", "Address is a list containing ingress points for the load-balancer"),
    _column("Ports", "Ports of TLS configurations that open"),
    _AGE,
]
_INGRESS_CLASS_COLUMNS = [
    _NAME,
    _column("Controller", "Controller that is responsible for handling this class"),
    _column("Parameters", "A reference to a resource with additional parameters"),
    _AGE,
]
_NETWORK_POLICY_COLUMNS = [
    _NAME,
    _column(
        "Pod-Selector",
        "Selects the pods to which this NetworkPolicy object applies. The array of ingress "
        "rules is applied to any pods selected by this field. Multiple network policies can "
        "select the same set of pods. In this case, the ingress rules for each are combined "
        "additively. This field is NOT optional and follows standard label selector semantics. "
        "An empty podSelector matches all pods in this namespace.",
    ),
    _AGE,
]
_RESOURCE_QUOTA_COLUMNS = [
    _NAME,
    _AGE,
    _column(
        "Request",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    _column(
        "Limit",
        "Limits control the maximum amount of cpu/memory that a container may use independent "
        "of contention on the node.",
    ),
]
_SERVICE_ACCOUNT_COLUMNS = [
    _NAME,
    _column(
        "Secrets",
        "Secrets is the list of secrets allowed to be used by pods running using this "
        "ServiceAccount. More info: https://kubernetes.io/docs/concepts/configuration/secret",
    ),
    _AGE,
]
_ROLE_BINDING_COLUMNS = [
    _NAME,
    _column(
        "Role",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
    ),
    _AGE,
    _column("Users", "Users in the roleBinding", priority=1),
    _column("Groups", "Groups in the roleBinding", priority=1),
    _column("ServiceAccounts", "ServiceAccounts in the roleBinding", priority=1),
]
_CLUSTER_ROLE_BINDING_COLUMNS = [
    _NAME,
    _column(
        "Role",
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef "
        "cannot be resolved, the Authorizer must return an error.",
    ),
    _AGE,
    _column("Users", "Users in the clusterRoleBinding", priority=1),
    _column("Groups", "Groups in the clusterRoleBinding", priority=1),
    _column("ServiceAccounts", "ServiceAccounts in the clusterRoleBinding", priority=1),
]
_PRIORITY_CLASS_COLUMNS = [
    _NAME,
    _column(
        "Value",
        "The value of this priority class. This is the actual priority that pods receive when "
        "they have the name of this class in their pod spec.",
        type_="integer",
    ),
    _column(
        "Global-Default",
        "globalDefault specifies whether this PriorityClass should be considered as the "
        "default priority for pods that do not have any priority class. Only one PriorityClass "
        "can be marked as `globalDefault`. However, if more than one PriorityClasses exists "
        "with their `globalDefault` field set to true, the smallest value of such global "
        "default PriorityClasses will be used as the default priority.",
        type_="boolean",
    ),
    _AGE,
    _column(
        "PreemptionPolicy",
        "PreemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
        "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset. This field is "
        "beta-level, gated by the NonPreemptingPriority feature-gate.",
    ),
]
_EVENT_COLUMNS = [
    _column(
        "Last Seen",
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    _column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _column(
        "Reason",
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status.",
    ),
    _column("Object", "The object that this event is about."),
    _column(
        "Subobject",
        "If referring to a piece of an object instead of an entire object, this string should "
        "contain a valid JSON/Go field access statement, such as "
        "desiredState.manifest.containers[2]. For example, if the object reference is to a "
        'container within a pod, this would take on a value like: "spec.containers{name}" '
        '(where "name" refers to the name of the container that triggered the event) or if '
        'no container name is specified "spec.containers[2]" (container with index 2 in this '
        "pod). This syntax is chosen only to have some well-defined way of referencing a part "
        "of an object.",
        priority=1,
    ),
    _column(
        "Source",
        "The component reporting this event. Should be a short machine understandable string.",
        priority=1,
    ),
    _column("Message", "A human-readable description of the status of this operation."),
    _column(
        "First Seen",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority=1,
    ),
    _column("Count", "The number of times this event has occurred.", priority=1),
    _column("Name", _NAME["description"], fmt="name", priority=1),
]
_NODE_COLUMNS = [
    _NAME,
    _column("Status", "The status of the node"),
    _column("Roles", "The roles of the node"),
    _AGE,
    _column("Version", "Kubelet Version reported by the node."),
    _column(
        "Internal-IP",
        "List of addresses reachable to the node. Queried from cloud provider, if available. "
        "More info: https://kubernetes.io/docs/concepts/nodes/node/#addresses Note: This field "
        "is declared as mergeable, but the merge key is not sufficiently unique, which can "
        "cause data corruption when it is merged. Callers should instead use a "
        "full-replacement patch. See http://pr.k8s.io/79391 for an example.",
        priority=1,
    ),
    _column(
        "External-IP",
        "List of addresses reachable to the node. Queried from cloud provider, if available. "
        "More info: https://kubernetes.io/docs/concepts/nodes/node/#addresses Note: This field "
        "is declared as mergeable, but the merge key is not sufficiently unique, which can "
        "cause data corruption when it is merged. Callers should instead use a "
        "full-replacement patch. See http://pr.k8s.io/79391 for an example.",
        priority=1,
    ),
    _column(
        "OS-Image",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        priority=1,
    ),
    _column(
        "Kernel-Version",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        priority=1,
    ),
    _column(
        "Container-Runtime",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
        "docker://1.5.0).",
        priority=1,
    ),
]
_PERSISTENT_VOLUME_COLUMNS = [
    _NAME,
    _column(
        "Capacity",
        "A description of the persistent volume's resources and capacity. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
    ),
    _column(
        "Access Modes",
        "AccessModes contains all ways the volume can be mounted. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
    ),
    _column(
        "Reclaim Policy",
        "What happens to a persistent volume when released from its claim. Valid options are "
        "Retain (default for manually created PersistentVolumes), Delete (default for "
        "dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be "
        "supported by the volume plugin underlying this PersistentVolume. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming\n\n",
    ),
    _column(
        "Status",
        "Phase indicates if a volume is available, bound to a claim, or released by a claim. "
        "More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase\n\n",
    ),
    _column(
        "Claim",
        "ClaimRef is part of a bi-directional binding between PersistentVolume and "
        "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the "
        "authoritative bind between PV and PVC. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
    ),
    _column("StorageClass", "StorageClass of the pv"),
    _column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
    _column(
        "Reason",
        "Reason is a brief CamelCase string that describes any failure and is meant for "
        "machine parsing and tidy display in the CLI.",
    ),
    _AGE,
    _column(
        "VolumeMode",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or "
        "to remain in raw block state. Value of Filesystem is implied when not included in "
        "spec.",
        priority=1,
    ),
]
_PERSISTENT_VOLUME_CLAIM_COLUMNS = [
    _NAME,
    _column("Status", "Phase represents the current phase of PersistentVolumeClaim.\n\n"),
    _column(
        "Volume",
        "VolumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    _column("Capacity", "Represents the actual resources of the underlying volume."),
    _column(
        "Access Modes",
        "AccessModes contains the actual access modes the volume backing the PVC has. More "
        "info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
    ),
    _column("StorageClass", "StorageClass of the pvc"),
    _column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    _AGE,
    _column(
        "VolumeMode",
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem "
        "is implied when not included in claim spec.",
        priority=1,
    ),
]
_ENDPOINTS_COLUMNS = [
    _NAME,
    _column(
        "Endpoints",
        "The set of all endpoints is the union of all subsets. Addresses are placed into "
        "subsets according to the IPs they share. A single address with multiple ports, some "
        "of which are ready and some of which are not (because they come from different "
        "containers) will result in the address being displayed in different subsets for the "
        "different ports. No address will appear in both Addresses and NotReadyAddresses in "
        "the same subset. Sets of addresses and ports that comprise a service.",
    ),
    _AGE,
]
_ENDPOINT_SLICE_COLUMNS = [
    _NAME,
    _column(
        "AddressType",
        "addressType specifies the type of address carried by this EndpointSlice. All "
        "addresses in this slice must be the same type. This field is immutable after "
        "creation. The following address types are currently supported: * IPv4: Represents an "
        "IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully "
        "Qualified Domain Name.\n\n",
    ),
    _column(
        "Ports",
        "ports specifies the list of network ports exposed by each endpoint in this slice. "
        "Each port must have a unique name. When ports is empty, it indicates that there are "
        'no defined ports. When a port is defined with a nil port value, it indicates "all '
        'ports". Each slice may include a maximum of 100 ports.',
    ),
    _column(
        "Endpoints",
        "endpoints is a list of unique endpoints in this slice. Each slice may include a "
        "maximum of 1000 endpoints.",
    ),
    _AGE,
]
_LEASE_COLUMNS = [
    _NAME,
    _column("Holder", "holderIdentity contains the identity of the holder of a current lease."),
    _AGE,
]
_STORAGE_CLASS_COLUMNS = [
    _NAME,
    _column("Provisioner", "Provisioner indicates the type of the provisioner."),
    _column(
        "ReclaimPolicy",
        "Dynamically provisioned PersistentVolumes of this storage class are created with this "
        "reclaimPolicy. Defaults to Delete.",
    ),
    _column(
        "VolumeBindingMode",
        "VolumeBindingMode indicates how PersistentVolumeClaims should be provisioned and "
        "bound.  When unset, VolumeBindingImmediate is used. This field is only honored by "
        "servers that enable the VolumeScheduling feature.",
    ),
    _column(
        "AllowVolumeExpansion",
        "AllowVolumeExpansion shows whether the storage class allow volume expand",
    ),
    _AGE,
]
_HPA_COLUMNS = [
    _NAME,
    _column(
        "Reference",
        "scaleTargetRef points to the target resource to scale, and is used to the pods for "
        "which metrics should be collected, as well as to actually change the replica count.",
    ),
    _column(
        "Targets",
        "metrics contains the specifications for which to use to calculate the desired replica "
        "count (the maximum replica count across all metrics will be used).  The desired "
        "replica count is calculated multiplying the ratio between the target value and the "
        "current value by the current number of pods.  Ergo, metrics used must decrease as the "
        "pod count is increased, and vice-versa.  See the individual metric source types for "
        "more information about how each type of metric must respond. If not set, the default "
        "metric will be set to 80% average CPU utilization.",
    ),
    _column(
        "MinPods",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can "
        "scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha "
        "feature gate HPAScaleToZero is enabled and at least one Object or External metric is "
        "configured.  Scaling is active as long as at least one metric value is available.",
    ),
    _column(
        "MaxPods",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can "
        "scale up. It cannot be less that minReplicas.",
    ),
    _column(
        "Replicas",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as "
        "last seen by the autoscaler.",
    ),
    _AGE,
]
_WEBHOOK_CONFIGURATION_COLUMNS = [
    _NAME,
    _column(
        "Webhooks",
        "Webhooks indicates the number of webhooks registered in this configuration",
        type_="integer",
    ),
    _AGE,
]
_ADMISSION_POLICY_COLUMNS = [
    _NAME,
    _column(
        "Validations",
        "Validations indicates the number of validation rules defined in this configuration",
        type_="integer",
    ),
    _column(
        "ParamKind",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    _AGE,
]
_ADMISSION_POLICY_BINDING_COLUMNS = [
    _NAME,
    _column(
        "PolicyName",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    _column(
        "ParamRef",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    _AGE,
]
_CSR_COLUMNS = [
    _NAME,
    _AGE,
    _column(
        "SignerName",
        "signerName indicates the requested signer, and is a qualified name.\n\nList/watch "
        "requests for CertificateSigningRequests can filter on this field using a "
        '"spec.signerName=NAME" fieldSelector.\n\nWell-known Kubernetes signers are:\n 1. '
        '"kubernetes.io/kube-apiserver-client": issues client certificates that can be used '
        "to authenticate to kube-apiserver.\n  Requests for this signer are never "
        'auto-approved by kube-controller-manager, can be issued by the "csrsigning" '
        "controller in kube-controller-manager.\n 2. "
        '"kubernetes.io/kube-apiserver-client-kubelet": issues client certificates that '
        "kubelets use to authenticate to kube-apiserver.\n  Requests for this signer can be "
        'auto-approved by the "csrapproving" controller in kube-controller-manager, and can '
        'be issued by the "csrsigning" controller in kube-controller-manager.\n 3. '
        '"kubernetes.io/kubelet-serving" issues serving certificates that kubelets use to '
        "serve TLS endpoints, which kube-apiserver can connect to securely.\n  Requests for "
        "this signer are never auto-approved by kube-controller-manager, and can be issued by "
        'the "csrsigning" controller in kube-controller-manager.\n\nMore details are '
        "available at "
        "https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom "  # noqa: E501
        "signerNames can also be specified. The signer defines:\n 1. Trust distribution: how "
        "trust (CA bundles) are distributed.\n 2. Permitted subjects: and behavior when a "
        "disallowed subject is requested.\n 3. Required, permitted, or forbidden x509 "
        "extensions in the request (including whether subjectAltNames are allowed, which "
        "types, restrictions on allowed values) and behavior when a disallowed extension is "
        "requested.\n 4. Required, permitted, or forbidden key usages / extended key usages.\n "
        "5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable "
        "by the admin.\n 6. Whether or not requests for CA certificates are allowed.",
    ),
    _column(
        "Requestor",
        'request contains an x509 certificate signing request encoded in a "CERTIFICATE '
        'REQUEST" PEM block. When serialized as JSON or YAML, the data is additionally '
        "base64-encoded.",
    ),
    _column(
        "RequestedDuration",
        "expirationSeconds is the requested duration of validity of the issued certificate. "
        "The certificate signer may issue a certificate with a different validity duration so "
        "a client must check the delta between the notBefore and and notAfter fields in the "
        "issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree "
        "implementations of the well-known Kubernetes signers will honor this field as long as "
        "the requested duration is not greater than the maximum duration they will honor per "
        "the --cluster-signing-duration CLI flag to the Kubernetes controller "
        "manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. "
        "Old signer that is unaware of the field (such as the in-tree\n     implementations "
        "prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested "
        "duration\n  3. Signer whose configured minimum is longer than the requested "
        "duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 "
        "minutes.\n\nAs of v1.22, this field is beta and is controlled via the CSRDuration "
        "feature gate.",
    ),
    _column(
        "Condition",
        'conditions applied to the request. Known conditions are "Approved", "Denied", and '
        '"Failed".',
    ),
]
_RUNTIME_CLASS_COLUMNS = [
    _NAME,
    _column("Handler", ""),
    _AGE,
]
_VOLUME_ATTACHMENT_COLUMNS = [
    _NAME,
    _column(
        "Attacher",
        "Attacher indicates the name of the volume driver that MUST handle this request. This "
        "is the name returned by GetPluginName().",
        fmt="name",
    ),
    _column("PV", "Name of the persistent volume to attach."),
    _column("Node", "The node that the volume should be attached to."),
    _column(
        "Attached",
        "Indicates the volume is successfully attached. This field must only be set by the "
        "entity completing the attach operation, i.e. the external-attacher.",
        type_="boolean",
    ),
    _AGE,
]
_CSI_NODE_COLUMNS = [
    _NAME,
    _column(
        "Drivers",
        "Drivers indicates the number of CSI drivers registered on the node",
        type_="integer",
    ),
    _AGE,
]
_CSI_DRIVER_COLUMNS = [
    _NAME,
    _column(
        "AttachRequired",
        "attachRequired indicates this CSI volume driver requires an attach operation (because "
        "it implements the CSI ControllerPublishVolume() method), and that the Kubernetes "
        "attach detach controller should call the attach volume interface which checks the "
        "volumeattachment status and waits until the volume is attached before proceeding to "
        "mounting. The CSI external-attacher coordinates with CSI volume driver and updates "
        "the volumeattachment status when the attach operation is complete. If the "
        "CSIDriverRegistry feature gate is enabled and the value is specified to false, the "
        "attach operation will be skipped. Otherwise the attach operation will be "
        "called.\n\nThis field is immutable.",
        type_="boolean",
    ),
    _column(
        "PodInfoOnMount",
        "If set to true, podInfoOnMount indicates this CSI volume driver requires additional "
        "pod information (like podName, podUID, etc.) during mount operations. If set to "
        "false, pod information will not be passed on mount. Default is false. The CSI driver "
        "specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod "
        "information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is "
        "responsible for parsing and validating the information passed in as VolumeContext. "
        "The following VolumeConext will be passed if podInfoOnMount is set to true. This list "
        'might grow, but the prefix will be used. "csi.storage.k8s.io/pod.name": pod.Name '
        '"csi.storage.k8s.io/pod.namespace": pod.Namespace "csi.storage.k8s.io/pod.uid": '
        'string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an '
        "ephemeral inline volume\n                                defined by a "
        'CSIVolumeSource, otherwise "false"\n\n"csi.storage.k8s.io/ephemeral" is a new '
        "feature in Kubernetes 1.16. It is only required for drivers which support both the "
        '"Persistent" and "Ephemeral" VolumeLifecycleMode. Other drivers can leave pod '
        "info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this "
        "field, drivers can only support one mode when deployed on such a cluster and the "
        "deployment determines which mode that is, for example via a command line parameter of "
        "the driver.\n\nThis field is immutable.",
        type_="boolean",
    ),
    _column(
        "StorageCapacity",
        "If set to true, storageCapacity indicates that the CSI volume driver wants pod "
        "scheduling to consider the storage capacity that the driver deployment will report by "
        "creating CSIStorageCapacity objects with capacity information.\n\nThe check can be "
        "enabled immediately when deploying a driver. In that case, provisioning new volumes "
        "with late binding will pause until the driver deployment has published some suitable "
        "CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the "
        "field unset or false and it can be flipped later when storage capacity information "
        "has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is "
        "mutable.\n\nThis is a beta field and only available when the CSIStorageCapacity "
        "feature is enabled. The default is false.",
        type_="boolean",
    ),
    _column(
        "TokenRequests",
        "TokenRequests indicates the CSI driver needs pods' service account tokens it is "
        "mounting volume for to do necessary authentication. Kubelet will pass the tokens in "
        "VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and "
        'validate the following VolumeContext: "csi.storage.k8s.io/serviceAccount.tokens": '
        '{\n  "<audience>": {\n    "token": <token>,\n    "expirationTimestamp": '
        "<expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each "
        "TokenRequest should be different and at most one token is empty string. To receive a "
        "new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume "
        "periodically.",
    ),
    _column(
        "RequiresRepublish",
        "RequiresRepublish indicates the CSI driver wants `NodePublishVolume` being "
        "periodically called to reflect any possible change in the mounted volume. This field "
        "defaults to false.\n\nNote: After a successful initial NodePublishVolume call, "
        "subsequent calls to NodePublishVolume should only update the contents of the volume. "
        "New mount points will not be seen by a running container.",
        type_="boolean",
    ),
    _column(
        "Modes",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. "
        'The default if the list is empty is "Persistent", which is the usage defined by the '
        "CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism. The "
        'other mode is "Ephemeral". In this mode, volumes are defined inline inside the pod '
        "spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A "
        "driver has to be aware of this because it is only going to get a NodePublishVolume "
        "call for such a volume. For more information about implementing this mode, see "
        "https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can "
        "support one or more of these modes and more modes may be added in the future. This "
        "field is beta.\n\nThis field is immutable.",
    ),
    _AGE,
]
_POD_TEMPLATE_COLUMNS = [
    _NAME,
    _column("Containers", "Names of each container in the template."),
    _column("Images", "Images referenced by each container in the template."),
    _column("Pod Labels", "The labels for the pod template."),
]
_FLOW_SCHEMA_COLUMNS = [
    _NAME,
    _column(
        "PriorityLevel",
        "`name` is the name of the priority level configuration being referenced Required.",
    ),
    _column(
        "MatchingPrecedence",
        "`matchingPrecedence` is used to choose among the FlowSchemas that match a given "
        "request. The chosen FlowSchema is among those with the numerically lowest (which we "
        "take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must "
        "be ranged in [1,10000]. Note that if the precedence is not specified, it will be set "
        "to 1000 as default.",
    ),
    _column(
        "DistinguisherMethod",
        "`distinguisherMethod` defines how to compute the flow distinguisher for requests that "
        "match this schema. `nil` specifies that the distinguisher is disabled and thus will "
        "always be the empty string.",
    ),
    _AGE,
    _column("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
]
_PRIORITY_LEVEL_COLUMNS = [
    _NAME,
    _column(
        "Type",
        "`type` indicates whether this priority level is subject to limitation on request "
        'execution.  A value of `"Exempt"` means that requests of this priority level are '
        "not subject to a limit (and thus are never queued) and do not detract from the "
        'capacity made available to other priority levels.  A value of `"Limited"` means '
        "that (a) requests of this priority level _are_ subject to limits and (b) some of the "
        "server's limited capacity is made available exclusively to this priority level. "
        "Required.",
    ),
    _column(
        "NominalConcurrencyShares",
        "`assuredConcurrencyShares` (ACS) configures the execution limit, which is a limit on "
        "the number of requests of this priority level that may be exeucting at a given time.  "
        "ACS must be a positive number. The server's concurrency limit (SCL) is divided among "
        "the concurrency-controlled priority levels in proportion to their assured concurrency "
        "shares. This produces the assured concurrency value (ACV) --- the number of requests "
        "that may be executing at a time --- for each such priority level:\n\n            "
        "ACV(l) = ceil( SCL * ACS(l) / ( sum[priority levels k] ACS(k) ) )\n\nbigger numbers "
        "of ACS mean more reserved concurrent requests (at the expense of every other PL). "
        "This field has a default value of 30.",
    ),
    _column(
        "Queues",
        "`queues` is the number of queues for this priority level. The queues exist "
        "independently at each apiserver. The value must be positive.  Setting it to 1 "
        "effectively precludes shufflesharding and thus makes the distinguisher method of "
        "associated flow schemas irrelevant.  This field has a default value of 64.",
    ),
    _column(
        "HandSize",
        "`handSize` is a small positive number that configures the shuffle sharding of "
        "requests into queues.  When enqueuing a request at this priority level the request's "
        "flow identifier (a string pair) is hashed and the hash value is used to shuffle the "
        "list of queues and deal a hand of the size specified here.  The request is put into "
        "one of the shortest queues in that hand. `handSize` must be no larger than `queues`, "
        "and should be significantly smaller (so that a few heavy flows do not saturate most "
        "of the queues).  See the user-facing documentation for more extensive guidance on "
        "setting this field.  This field has a default value of 8.",
    ),
    _column(
        "QueueLengthLimit",
        "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given "
        "queue of this priority level at a time; excess requests are rejected.  This value "
        "must be positive.  If not specified, it will be defaulted to 50.",
    ),
    _AGE,
]
_CSI_STORAGE_CAPACITY_COLUMNS = [
    _NAME,
    _column(
        "StorageClassName",
        "The name of the StorageClass that the reported capacity applies to. It must meet the "
        "same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If "
        "that object no longer exists, the CSIStorageCapacity object is obsolete and should be "
        "removed by its creator. This field is immutable.",
    ),
    _column(
        "Capacity",
        "Capacity is the value reported by the CSI driver in its GetCapacityResponse for a "
        "GetCapacityRequest with topology and parameters that match the previous "
        "fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available "
        "capacity, in bytes, of the storage that can be used to provision volumes. If not set, "
        "that information is currently unavailable and treated like zero capacity.",
    ),
]
