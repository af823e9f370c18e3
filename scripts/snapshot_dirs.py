"""What the question-writing scripts (`page-digests.py`, `draw-pages.py`)
read of a snapshots folder and of sources.yaml, in one place, so that both
pick the same artifact of a source and treat editions alike.
"""
import glob, re

import yaml


def versions(snaps, source):
    """The version folders of `source` under `snaps`, oldest first: the
    dot-separated parts of a label compare as numbers where they are
    numbers (3.10 after 3.9)."""
    return sorted(glob.glob(f"{snaps}/{source}/*/"), key=lambda v: [
        int(x) if x.isdigit() else x for x in re.split(r"[.]", v.rstrip("/").split("/")[-1])
    ])


def newest_artifact(version_dir):
    """The newest artifact folder of a version folder (snapshot ids sort by
    their creation time)."""
    return sorted(glob.glob(version_dir + "*/"))[-1]


def edition_patterns(config="sources.yaml"):
    """Each source's `editions` pattern in sources.yaml, by source id."""
    return {s["id"]: re.compile(s["editions"])
            for s in yaml.safe_load(open(config)).get("sources", []) if s.get("editions")}
