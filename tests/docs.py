#!/usr/bin/env python3
"""tests/docs.py: the documentation's excerpts and images are what ksim prints now.

`make docs` (python3 tests/docs.py --update) regenerates them; `make test`
(python3 tests/docs.py) regenerates them into a temporary folder and fails
with a diff when one differs from what the documents hold.

A document marks what is generated with HTML comments (invisible when the
Markdown is rendered), each naming the shell command that makes it:

    <!-- ksim-run: COMMAND -->             run it (a step the reader takes whose
                                           output is not quoted)
    <!-- ksim-output: COMMAND -->          the fenced block right after it is the
    ```                                    command's standard output (a pipe may trim
    ...                                    it: `| grep ...`, `| sed -n ...`)
    ```
    <!-- ksim-markdown: COMMAND -->        the lines up to <!-- ksim-end --> are its
    ...                                    output, as Markdown (a table)
    <!-- ksim-end -->
    <!-- ksim-image: img/NAME.png: COMMAND -->   COMMAND writes the image to "$OUT";
                                           it is compared byte for byte with (or
                                           copied to) the document's img/NAME.png
    <!-- ksim-image-loose: img/NAME.png: COMMAND -->   the same, for a browser's
                                           screenshot, whose pixels follow the
                                           browser's version: checked only to be made
                                           and not blank (at least 20 kB); --update
                                           keeps the committed one (each screenshot
                                           differs from the last in a few pixels, so
                                           copying it would change the file on every
                                           run), --redraw replaces it

A fenced block may be indented (in a list); its lines keep the indentation.

The commands of one document run in order in one fresh folder, as a reader
runs them from the top of the repository (bin, scenarios, plots and tests are
linked into it), so a database made by one command is there for the next.
Output is normalised so that it does not depend on where it ran: the folder's
path reads /home/you/ksim, and a run folder's settings hash reads <hash>.
Every image in an img/ folder next to a checked document must come from a
marker (no image is left to go stale).
"""
import concurrent.futures
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = ["README.md", "docs/tutorial.md", "docs/model.md"]
LINKED = ["bin", "scenarios", "plots", "tests"]
HOME = "/home/you/ksim"
MARKER = re.compile(r"^<!-- ksim-(run|output|markdown|image|image-loose): (.*) -->\s*$")
LOOSE_BYTES_MIN = 20000
END = "<!-- ksim-end -->"


class DocsError(Exception):
    """A marked command failed: the document cannot be checked."""


def normalise(text, sandbox):
    text = text.replace(os.path.realpath(sandbox), HOME).replace(sandbox, HOME)
    text = re.sub(r"(-s\d+-)[0-9a-f]{8}\b", r"\1<hash>", text)
    return "\n".join(line.rstrip() for line in text.split("\n"))


def run(command, sandbox, env, where, cache=None):
    """The command's normalised stdout. A document that quotes one command
    several times (parts of one run's output) runs it once: identical
    commands of one document are cached (they would only add equal runs)."""
    if cache is not None and command in cache:
        return cache[command]
    result = subprocess.run(["sh", "-c", command], cwd=sandbox, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode not in (0, 1):
        raise DocsError("%s: `%s` exited %d:\n%s" % (where, command, result.returncode,
                                                    result.stderr))
    output = normalise(result.stdout, sandbox).rstrip("\n")
    if cache is not None:
        cache[command] = output
    return output


def process(path, update, problems, redraw=False):
    """Regenerates one document; returns its new text."""
    with open(path) as handle:
        lines = handle.read().split("\n")
    sandbox = tempfile.mkdtemp(prefix="ksim-docs-")
    images = []
    try:
        for name in LINKED:
            os.symlink(os.path.join(ROOT, name), os.path.join(sandbox, name))
        env = dict(os.environ, LC_ALL="C", KSIM_PLOT_DIR=os.path.join(ROOT, "plots"))
        out = []
        cache = {}
        i = 0
        while i < len(lines):
            line = lines[i]
            match = MARKER.match(line)
            out.append(line)
            i += 1
            if not match:
                continue
            kind, command = match.group(1), match.group(2)
            where = "%s:%d" % (os.path.relpath(path, ROOT), i)
            if kind == "run":
                run(command, sandbox, env, where)
            elif kind in ("image", "image-loose"):
                target, command = command.split(": ", 1)
                produced = os.path.join(sandbox, "image.png")
                if os.path.exists(produced):
                    os.unlink(produced)
                run(command, sandbox, dict(env, OUT=produced), where)
                image = os.path.join(os.path.dirname(path), target)
                images.append(os.path.realpath(image))
                fresh = open(produced, "rb").read() if os.path.exists(produced) else b""
                old = open(image, "rb").read() if os.path.exists(image) else None
                if kind == "image-loose" and len(fresh) < LOOSE_BYTES_MIN:
                    problems.append("%s: `%s` made no image of %s (%d bytes)" %
                                    (where, command, target, len(fresh)))
                elif kind == "image-loose" and update and old is not None and not redraw:
                    pass
                elif update and fresh != old:
                    shutil.copyfile(produced, image)
                elif kind == "image" and fresh != old:
                    problems.append("%s: %s differs from what `%s` draws now" %
                                    (where, target, command))
                elif old is None:
                    problems.append("%s: %s is missing" % (where, target))
            elif kind == "output":
                if i >= len(lines) or not lines[i].lstrip().startswith("```"):
                    problems.append("%s: ksim-output is not followed by a fenced block" % where)
                    continue
                indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
                out.append(lines[i])
                start = i + 1
                end = start
                while end < len(lines) and lines[end].strip() != "```":
                    end += 1
                old_lines = [line[len(indent):] if line.startswith(indent) else line
                             for line in lines[start:end]]
                compare(old_lines, run(command, sandbox, env, where, cache), where, out,
                        problems, indent)
                out.append(indent + "```")
                i = end + 1
            else:
                end = i
                while end < len(lines) and lines[end] != END:
                    end += 1
                if end == len(lines):
                    problems.append("%s: ksim-markdown without %s" % (where, END))
                    continue
                compare(lines[i:end], run(command, sandbox, env, where, cache), where, out,
                        problems)
                out.append(END)
                i = end + 1
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    folder = os.path.join(os.path.dirname(path), "img")
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            image = os.path.realpath(os.path.join(folder, name))
            if name.endswith(".png") and image not in images and not shared(image, path):
                problems.append("%s: img/%s comes from no ksim-image marker" %
                                (os.path.relpath(path, ROOT), name))
    return "\n".join(out)


def shared(image, path):
    """True when another checked document draws the image."""
    for other in DOCUMENTS:
        other_path = os.path.join(ROOT, other)
        if other_path != path and os.path.exists(other_path):
            with open(other_path) as handle:
                if os.path.basename(image) in handle.read():
                    return True
    return False


def compare(old_lines, fresh, where, out, problems, indent=""):
    new_lines = fresh.split("\n") if fresh else []
    if old_lines != new_lines:
        diff = difflib.unified_diff(old_lines, new_lines, "in the document", "ksim now",
                                    lineterm="", n=1)
        problems.append("%s: the excerpt differs from what ksim prints now:\n    %s" %
                        (where, "\n    ".join(diff)))
    out.extend((indent + line).rstrip() for line in new_lines)


def main():
    redraw = "--redraw" in sys.argv[1:]
    update = redraw or "--update" in sys.argv[1:]
    if not os.access(os.path.join(ROOT, "bin", "ksim"), os.X_OK):
        sys.stderr.write("docs: bin/ksim is not built\n")
        return 1
    # The documents' sandboxes are independent: regenerate them side by side.
    found = [[] for _ in DOCUMENTS]
    paths = [os.path.join(ROOT, document) for document in DOCUMENTS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(DOCUMENTS)) as pool:
        texts = list(pool.map(lambda k: process(paths[k], update, found[k], redraw),
                              range(len(DOCUMENTS))))
    problems = [problem for per_document in found for problem in per_document]
    for document, path, text in zip(DOCUMENTS, paths, texts):
        if update:
            with open(path) as handle:
                if handle.read() != text:
                    with open(path, "w") as rewrite:
                        rewrite.write(text)
                    print("docs: updated %s" % document)
    if update:
        structural = [problem for problem in problems if "differs" not in problem]
        for problem in structural:
            print("docs: FAIL %s" % problem)
        if structural:
            return 1
        print("docs: every excerpt and image regenerated")
        return 0
    for problem in problems:
        print("docs: FAIL %s" % problem)
    print("docs: %d problem(s); `make docs` regenerates the excerpts and images" % len(problems)
          if problems else "docs: every excerpt and image is what ksim prints now")
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DocsError as error:
        sys.stderr.write("docs: FAIL %s" % error)
        sys.exit(1)
