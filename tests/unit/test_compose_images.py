"""Which images a compose cluster runs: official ones where the engine has them, our local
builds otherwise, one line when neither is here; nothing is ever pulled implicitly."""

from __future__ import annotations

import pytest

from highwater.core.errors import SetupError
from highwater.harness.compose.images import render_images, resolve_images

OFFICIAL = ("apache/kafka:4.4.0", "ghcr.io/shopify/toxiproxy:2.12.0")
LOCAL = ("highwater/kafka:4.4.0", "highwater/toxiproxy:2.12.0")


def engine(*tags: str) -> set[str]:
    return set(tags)


def test_official_images_are_preferred_where_the_engine_has_them() -> None:
    here = engine(*OFFICIAL, *LOCAL)
    assert resolve_images("4.4.0", exists=here.__contains__) == OFFICIAL


def test_local_builds_stand_in_where_no_registry_was_reached() -> None:
    here = engine(*LOCAL)
    assert resolve_images("4.4.0", exists=here.__contains__) == LOCAL
    mixed = engine(OFFICIAL[0], LOCAL[1])  # the broker pulled, the proxy built here
    assert resolve_images("4.4.0", exists=mixed.__contains__) == (OFFICIAL[0], LOCAL[1])


def test_a_missing_image_is_one_line_saying_what_to_run() -> None:
    with pytest.raises(SetupError) as exc:
        resolve_images("4.4.0", exists=engine(*LOCAL[1:]).__contains__)
    text = str(exc.value)
    assert "\n" not in text and "apache/kafka:4.4.0 nor highwater/kafka:4.4.0" in text
    assert "highwater images pull" in text and "highwater images build" in text


def test_an_explicit_image_is_used_as_given_or_refused() -> None:
    here = engine("my/kafka:dev", *LOCAL)
    assert resolve_images("4.4.0", "my/kafka:dev", here.__contains__) == ("my/kafka:dev", LOCAL[1])
    with pytest.raises(SetupError, match="no image my/kafka:gone in the engine: pass an image the engine has"):
        resolve_images("4.4.0", "my/kafka:gone", here.__contains__)


def test_a_rendered_file_names_what_is_here_else_the_official_tags() -> None:
    assert render_images("4.4.0", engine().__contains__) == OFFICIAL  # a user's machine pulls them
    assert render_images("4.4.0", engine(*LOCAL).__contains__) == LOCAL
