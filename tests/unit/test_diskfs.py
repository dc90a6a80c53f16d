"""The pure parts of the disk fault layer's driver (``harness.diskfs``); the layer itself is
tested on a real cluster (``tests/integration/test_disk_faults.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.harness.diskfs import DiskError, LossyDisk, lossyfs_mounts, source_digest

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
98 22 0:52 / /c/hw-0/nodes/kafka-1/data rw,nosuid,nodev,relatime shared:40 - fuse.lossyfs highwater-lossyfs:/c/d rw
99 22 0:53 / /c/hw-0/nodes/kafka\\0402/data rw,relatime shared:41 - fuse.lossyfs highwater-lossyfs:/c/e rw
100 22 0:54 / /mnt/other rw,relatime shared:42 - fuse.sshfs host:/ rw
"""


def test_only_lossyfs_mounts_are_ours_with_escapes_decoded() -> None:
    assert lossyfs_mounts(MOUNTINFO) == [Path("/c/hw-0/nodes/kafka-1/data"), Path("/c/hw-0/nodes/kafka 2/data")]


def test_a_disk_without_its_layer_says_so_in_one_line(tmp_path: Path) -> None:
    disk = LossyDisk.attach(tmp_path, tmp_path / "data")
    with pytest.raises(DiskError, match=r"^no disk layer at .*lossyfs.port"):
        disk.status()


def test_the_build_is_keyed_by_the_sources() -> None:
    assert len(source_digest()) == 16 and source_digest() == source_digest()
