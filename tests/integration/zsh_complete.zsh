#!/usr/bin/env zsh
# zsh_complete.zsh FPATH_DIR LINE: what zsh's completion system offers for
# the last word of LINE, one candidate per line (sorted, once each), with
# the completion functions of FPATH_DIR found first.
#
# An interactive zsh (zsh -f -i) runs on a pseudo-terminal (zsh/zpty) with
# compinit, its dump file in FPATH_DIR (the first call writes it, 2 s; the
# next ones read it, 0.2 s instead of 2.5 s each); LINE and a TAB are typed
# into it.  Its compadd is wrapped: every
# call that adds matches adds them to an array instead (builtin compadd -A,
# which does the matching against the word), and the candidates are printed
# between two markers, which this script reads back.  Exit 2 when zsh could
# not be driven (no marker within 20 s).
emulate -L zsh
zmodload zsh/zpty || exit 2
zmodload zsh/datetime || exit 2
zmodload zsh/zselect || exit 2
dir=$1 line=$2
setup=$(mktemp) || exit 2
trap 'rm -f $setup; zpty -d cap 2>/dev/null' EXIT
cat >$setup <<EOF
PROMPT='' RPROMPT='' PS2=''
unsetopt zle_bracketed_paste 2>/dev/null
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u -d ${(q)dir}/.zcompdump
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
zstyle ':completion:*' menu no
bindkey '^I' complete-word
_cap_begin() { print -r -- '<<<CAPTURE-BEGIN>>>' }
_cap_end() { print -r -- '<<<CAPTURE-END>>>' }
compprefuncs=(_cap_begin)
comppostfuncs=(_cap_end)
# A call that only asks for matches (-O, -A, -D) is passed on as it is; any
# other one is captured.
compadd() {
  local -a _cap_hits
  if [[ " \${(j: :)@[1,(i)(-|--)]} " == *' -'[OAD]' '* ]]; then
    builtin compadd "\$@"
    return
  fi
  builtin compadd -A _cap_hits "\$@"
  local _h
  for _h in "\${_cap_hits[@]}"; do print -r -- "CAND:\$_h"; done
  (( \${#_cap_hits} ))
}
print -r -- '<<<SETUP''-DONE>>>'
EOF
zpty cap zsh -f -i || exit 2
zpty -w cap "source ${(q)setup}"
# read_until PATTERN: reads the pty's output until a line matches PATTERN,
# collecting the lines in $out; fails after 20 s.
typeset -a out
read_until() {
  local chunk deadline=$((EPOCHSECONDS + 20))
  while (( EPOCHSECONDS < deadline )); do
    if zpty -r -t cap chunk; then
      out+=("${chunk//[$'\r\n']/}")
      [[ $chunk == *$1* ]] && return 0
    else
      zselect -t 2 # 20 ms, without a process
    fi
  done
  return 1
}
read_until '<<<SETUP-DONE>>>' || { print -u2 "zsh_complete: the shell did not start"; exit 2; }
out=()
zpty -n -w cap "$line"$'\t'
read_until '<<<CAPTURE-END>>>' || { print -u2 "zsh_complete: no completion for [$line]"; exit 2; }
typeset -a cands
local l
for l in "${out[@]}"; do
  [[ $l == *CAND:* ]] && cands+=("${l#*CAND:}")
done
print -rl -- ${(ou)cands}
