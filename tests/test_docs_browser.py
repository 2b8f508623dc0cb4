"""Pages of the docs site, built from this checkout and opened in headless Chromium from disk:
what a reader opens must work (issue 40). The site is built into a temporary directory, as
`make docs` builds it (mkdocs.yml: plain .html links, so it reads from file:// too)."""

import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from headless_chromium import chromium_path, headless_chromium, visit

ROOT = Path(__file__).parent.parent
# The home page, a page with the README's picture, a study with its charts, both generated
# references and the longest hand-written page.
PAGES = [
    "index.html",
    "getting-started.html",
    "study-000-cache-split.html",
    "reference/cli.html",
    "reference/spec.html",
    "troubleshooting.html",
]

pytestmark = [
    pytest.mark.skipif(
        chromium_path() is None, reason="no chromium: `make test` installs Debian's (as root)"
    ),
    pytest.mark.slow,
    pytest.mark.browser,
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="no mkdocs: `make test` installs it (.[docs])")
    site_dir = tmp_path_factory.mktemp("docs-site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site_dir],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr
    return site_dir


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as devtools:
        yield devtools


@pytest.mark.parametrize("page_name", PAGES)
def test_docs_page_opens_cleanly_in_chromium(site, browser, page_name):
    page_path = site / page_name
    assert page_path.is_file(), f"{page_name} was not built"
    page = visit(browser, page_path)
    assert page.console_errors == []
    assert page.network_requests == [], "the site should need nothing beyond itself"
    assert page.failed_requests == []
    assert page.broken_images == []
    for link in page.links:
        parsed = urllib.parse.urlparse(link)
        if parsed.scheme != "file":
            continue  # the theme's own credit link; the strict build checks ours
        target = Path(urllib.parse.unquote(parsed.path))
        assert target.exists(), f"broken link: {link}"
