"""The ``external`` backend: a cluster highwater did not start, described by a cluster file.

Operators point highwater at *their* cluster (staging, Kubernetes, a managed test tier) with
``--backend external --cluster-file FILE`` (the CLI and the pytest plugin put the path in
``HIGHWATER_CLUSTER_FILE``, because a backend factory only receives a ``ClusterSpec``). The file
(TOML, see ``docs/external-clusters.md``) grants what highwater may do, and nothing more:

* always: clients, admin requests, and topics whose names start with ``topic_prefix`` (deleted
  at ``stop`` unless ``delete_topics = false``);
* link control (:class:`~harness.backend.LinkControl`) only with a ``[toxiproxy]`` table: the
  operator's Toxiproxy API and the proxy name of each directed link; only named links exist;
* process control (:class:`~harness.backend.ProcessControl`) only with a ``[commands]`` table:
  shell templates with ``{id}``, ``{name}`` and ``{host}``.

Capabilities are decided by *class* (:func:`backend_class`), because the protocols are
runtime-checkable by attribute presence: a backend without a Toxiproxy API has no ``links``
attribute at all, so ``faults.capability`` refuses link faults before a run starts.

A malformed file raises :class:`ClusterFileError` (one line: the file, the key, what is wrong)
before anything is contacted.

One room, split by concern: the file (``cluster_file``), the cluster it describes
(``cluster``), and what the file grants beyond connecting (``control``).
"""

from .cluster import ExternalCluster
from .cluster_file import (
    ENV_CLUSTER_FILE,
    ENV_KEEP_TOPICS,
    BrokerEntry,
    ClusterFile,
    ClusterFileError,
    ExternalClusterError,
    build_topology,
    check_shape,
    cluster_file_from_env,
    load_cluster_file,
    with_command_line,
)
from .control import CommandNode, ExternalFull, ExternalLinks, ExternalProcs, backend_class, connect

__all__ = [
    "ENV_CLUSTER_FILE",
    "ENV_KEEP_TOPICS",
    "BrokerEntry",
    "ClusterFile",
    "ClusterFileError",
    "CommandNode",
    "ExternalCluster",
    "ExternalClusterError",
    "ExternalFull",
    "ExternalLinks",
    "ExternalProcs",
    "backend_class",
    "build_topology",
    "check_shape",
    "cluster_file_from_env",
    "connect",
    "load_cluster_file",
    "with_command_line",
]
