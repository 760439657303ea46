#!/usr/bin/env bash
# Debian packages for examples/train_english_recognizer.py and examples/unseen_voice_check.py, on a
# fresh Debian bookworm machine (as root). The MBROLA diphones and SVOX Pico are in contrib/non-free.
#   bash examples/english_recognizer_setup.sh && pip install -e ".[audio,lm]" pocketsphinx
set -euo pipefail
sources=/etc/apt/sources.list.d/debian.sources
if [ -f "$sources" ] && ! grep -q "non-free" "$sources"; then
  sed -i 's/^Components: main$/Components: main contrib non-free/' "$sources"
fi
apt-get -o Acquire::Languages=en update   # brings the package descriptions (Translation-en): text
voices="us1 us2 us3 en1 af1 de1 de2 de3 de4 de5 de6 fr1 fr4 gr2 hu1 nl2 pl1 ro1 sw1 sw2"
apt-get install -y lz4 sword-text-web sword-text-kjv dict-jargon dict-foldoc diatheke \
  espeak-ng mbrola $(printf 'mbrola-%s ' $voices) \
  flite festival festvox-kallpc16k festvox-rablpc16k festvox-kdlpc16k festvox-us-slt-hts \
  rhvoice rhvoice-english libttspico-utils
