"""Find and check the Java runtime the brokers run on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from highwater.core.errors import JavaError


@dataclass(frozen=True)
class Java:
    executable: Path
    major: int


def required_java_major(kafka_version: str) -> int:
    """Kafka 4.x brokers need Java 17; 3.x brokers run on Java 11 (and 8, which we do not test)."""
    return 17 if int(kafka_version.split(".")[0]) >= 4 else 11


def parse_java_major(version_output: str) -> int:
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        raise JavaError(f"cannot read the Java version from: {version_output.strip()[:200]!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_352" style
        major = int(m.group(2))
    return major


def find_java(kafka_version: str | None = None) -> Java:
    """``$JAVA_HOME/bin/java`` if JAVA_HOME is set, else ``java`` on PATH; checked for version."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        exe = Path(java_home) / "bin" / "java"
        if not exe.is_file():
            raise JavaError(f"JAVA_HOME={java_home} has no bin/java: point JAVA_HOME at a JDK 17+")
    else:
        found = shutil.which("java")
        if not found:
            raise JavaError("Java not found: install a JDK 17+ or set JAVA_HOME")
        exe = Path(found)
    try:
        out = subprocess.run([str(exe), "-version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        raise JavaError(f"cannot run {exe}: {exc}") from exc
    major = parse_java_major(out.stderr + out.stdout)
    need = required_java_major(kafka_version) if kafka_version else 11
    if major < need:
        raise JavaError(
            f"Java {major} at {exe} is too old: Kafka {kafka_version or ''} needs Java {need}+".replace("  ", " ")
        )
    return Java(executable=exe, major=major)


def jvm_base(java: Java, heap_mb: int) -> list[str]:
    """The java command and the flags every Kafka JVM of ours runs with (nodes, storage
    formatting, the class-archive training run: an archive is used under the flags it was made
    with)."""
    return [
        str(java.executable),
        f"-Xms{heap_mb}m",
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # 2 cores: fast start beats peak speed
    ]
