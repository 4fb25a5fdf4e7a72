#!/usr/bin/env bash
# The repository stands alone: no tracked file cites design notes or data that live outside it
# (DESIGN.md, REFERENCES.md, STYLE.md, ../shared/). Usage: bash test/lint/standalone_test.sh ROOT
set -u
root=${1:?usage: standalone_test.sh PROJECT_DIR}
cd "$root" || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "not a git checkout: skipped"; exit 77
fi
hits=$(git ls-files -z | xargs -0 grep -nIE 'DESIGN\.md|REFERENCES\.md|STYLE\.md|\.\./shared/|shared/data/' -- \
       | grep -v '^test/lint/standalone_test.sh:' || true)
if [[ -n $hits ]]; then
  echo "references to files outside the repository:"; echo "$hits"; exit 1
fi
echo "no references outside the repository"
