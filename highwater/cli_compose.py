"""``highwater images build`` and ``highwater compose render``: the compose backend's setup."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from highwater.cli_cluster import add_limit_args, cpus_from_args
from highwater.console import progress
from highwater.core.errors import SetupError
from highwater.harness.compose.images import build_images, image_exists, pull_images, render_images
from highwater.harness.compose.render import RenderInput, render
from highwater.harness.config import ClusterSpec, effective_client_racks
from highwater.harness.distribution import default_version
from highwater.harness.local.cluster import kraft_cluster_id
from highwater.harness.topology import Ports


def register(sub: argparse._SubParsersAction) -> None:
    images = sub.add_parser(
        "images",
        help="container images for the compose backend",
        description="The container images of the compose backend (docs/compose.md): 'build' builds "
        "highwater/kafka and highwater/toxiproxy locally, 'pull' pulls the official ones.",
    )
    isub = images.add_subparsers(dest="images_command", metavar="ACTION", required=True)
    b = isub.add_parser("build", help="build highwater/kafka and highwater/toxiproxy locally (no registry)")
    b.add_argument("--kafka-version", metavar="V", help="Kafka version (default: the newest stable release)")
    b.add_argument("--force", action="store_true", help="rebuild even when the images exist")
    b.set_defaults(func=cmd_build)
    pl = isub.add_parser("pull", help="docker pull the official apache/kafka and Toxiproxy images (needs a registry)")
    pl.add_argument("--kafka-version", metavar="V", help="Kafka version (default: the newest stable release)")
    pl.set_defaults(func=cmd_pull)

    compose = sub.add_parser(
        "compose",
        help="docker-compose files for a highwater cluster",
        description="'render' writes a docker-compose.yml of a highwater cluster (docs/compose.md).",
    )
    csub = compose.add_subparsers(dest="compose_command", metavar="ACTION", required=True)
    r = csub.add_parser("render", help="write a docker-compose.yml (host networking, one proxy per link)")
    r.add_argument("--brokers", type=int, default=3, help="broker containers")
    r.add_argument("--racks", type=int, default=3, help="racks (broker.rack), brokers dealt to them in turn")
    r.add_argument("--controllers", type=int, default=0, help="dedicated controllers (0: combined mode)")
    r.add_argument(
        "--kafka-version", metavar="V", default=None, help="Kafka version (default: the newest stable release)"
    )
    r.add_argument(
        "--image",
        metavar="IMAGE",
        help="broker image (default: apache/kafka:<version>, or highwater/kafka:<version> when only that is here)",
    )
    r.add_argument(
        "--toxiproxy-image",
        metavar="IMAGE",
        help="default: Shopify's official image, or highwater/toxiproxy:<version> when only that is here",
    )
    r.add_argument("--slot", type=int, default=40, help="address slot: nodes live on 127.(100+slot).x.y")
    r.add_argument("--base-port", type=int, default=19092, help="the first listener port")
    r.add_argument("--name", default="hw-compose", help="cluster id: compose project and label value")
    add_limit_args(r)
    r.add_argument("-o", "--output", required=True, type=Path, help="the docker-compose.yml to write")
    r.set_defaults(func=cmd_render)


def cmd_build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    version = args.kafka_version or default_version(progress)
    for tag in build_images(version, progress, force=args.force):
        print(tag)
    progress(f"images ready in {time.monotonic() - started:.0f} s")
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    version = args.kafka_version or default_version(progress)
    for tag in pull_images(version, progress):
        print(tag)
    return 0


def _engine_has(tag: str) -> bool:
    """Rendering needs no daemon: without one nothing is here and the official tags are written."""
    try:
        return image_exists(tag)
    except SetupError:
        return False


def cmd_render(args: argparse.Namespace) -> int:
    spec = ClusterSpec(
        brokers=args.brokers,
        racks=args.racks,
        controllers=args.controllers,
        kafka_version=args.kafka_version,
        broker_cpus=cpus_from_args(args),
        broker_memory=args.broker_memory,
    )
    version = args.kafka_version or default_version(progress)
    spec = ClusterSpec(**{**spec.__dict__, "kafka_version": version})
    default_kafka, default_proxy = render_images(version, _engine_has)
    n_clients = len(effective_client_racks(spec))
    b = args.base_port
    ports = Ports(b, b + 1, tuple(range(b + 2, b + 2 + n_clients)), b + 2 + n_clients)
    text = render(
        RenderInput(
            spec=spec,
            cluster_id=args.name,
            kraft_cluster_id=kraft_cluster_id(),
            kafka_image=args.image or default_kafka,
            toxiproxy_image=args.toxiproxy_image or default_proxy,
            slot=args.slot,
            ports=ports,
        )
    )
    args.output.write_text(text)
    progress(
        f"wrote {args.output}: {spec.brokers} brokers, {spec.racks} racks; start it with docker-compose -f {args.output} up"
    )
    return 0
