#!/usr/bin/env bash
# Developer shortcut (not used by tools/test): build with ninja into build/dev
# and lay out an importable tree in build/stage (PYTHONPATH=build/stage).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH"
[ -d build/dev ] || meson setup build/dev -Dbuildtype=release >/dev/null
ninja -C build/dev >/tmp/nclx-ninja.log 2>&1 || { grep -E "error|pyx:[0-9]+:[0-9]+" /tmp/nclx-ninja.log | head -40; exit 1; }
rm -rf build/stage && mkdir -p build/stage
cp -r nclx build/stage/
find build/stage \( -name "*.in" -o -name meson.build \) -delete
cp build/dev/nclx/_build_info.py build/stage/nclx/
(cd build/dev && find nclx -name "*.so" -exec cp {} ../stage/{} \;)
cp build/dev/nclx/include/ncl_spec.h build/stage/nclx/include/
echo "staged: PYTHONPATH=$ROOT/build/stage"
