#!/usr/bin/env bash
# Layering (README.md, Layout): only sim/config sees yaml-cpp, only sim/platform, sim/engine and
# sim/fabric/*_engine.cpp see SimGrid; public headers in include/ see neither; only sim/trace
# sees zlib.
set -u
root=${1:?usage: check_layers.sh PROJECT_DIR}
status=0
yaml=$(grep -rlE '#include\s*[<"]yaml-cpp' "$root/sim" "$root/include" | grep -v "^$root/sim/config/" || true)
if [[ -n "$yaml" ]]; then echo "yaml-cpp included outside sim/config:"; echo "$yaml"; status=1; fi
sg=$(grep -rlE '#include\s*[<"](simgrid|xbt)/' "$root/sim" "$root/include" \
     | grep -vE "^$root/sim/(platform|engine)/" || true)
if [[ -n "$sg" ]]; then echo "SimGrid included outside sim/platform and sim/engine:"; echo "$sg"; status=1; fi
zl=$(grep -rlE '#include\s*[<"]zlib\.h' "$root/sim" "$root/include" | grep -v "^$root/sim/trace/" || true)
if [[ -n "$zl" ]]; then echo "zlib included outside sim/trace:"; echo "$zl"; status=1; fi
[[ $status -eq 0 ]] && echo "layers ok"
exit $status
