#!/bin/sh
# A throwaway "user's tree": Debian's linux-source-6.12 as one commit, then one small mm/ change.
set -e
cd /tmp/nm-cost
date -u
cp -a /root/.cache/numa-matrix/src/pristine-bfa41343e6e6/linux-source-6.12 linux
cd linux
git init -q -b main .
git -c user.name=user -c user.email=user@example.org add -A
git -c user.name=user -c user.email=user@example.org commit -q -m "Debian linux-source-6.12 as unpacked"
git tag base
date -u
#!/bin/sh
# Debian's tree ignores everything at its top (.gitignore "/*" for its packaging
# repository): add the files by force.
set -e
cd /tmp/nm-cost/linux
date -u
git -c user.name=user -c user.email=user@example.org add -f -A .
git -c user.name=user -c user.email=user@example.org commit -q -m "Debian linux-source-6.12 as unpacked"
git tag base
git log --oneline
date -u
