# fish completion for plugfs(8).
# Installed as /usr/share/fish/vendor_completions.d/plugfs.fish.
#
# It offers what contrib/plugfs.bash-completion offers: the commands, each
# command's options, the plugin types of the config (-c FILE, else
# $PLUGFS_CONFIG, else /etc/plugfs/plugfs.ini) and of the running daemon,
# the plugin names and the alloc ids the daemon serves (nothing from the
# daemon when it cannot be reached).  tests/integration/test_docs_completion_shells.sh
# checks it in a real fish.

# The options of COMMAND that take a value (-c FILE for every command).
function __plugfs_valued -a cmd
    echo -c
    switch "$cmd"
        case register
            printf '%s\n' -t --type -n --name -a --alloc -s --socket -V --version \
                -k --kind -o --option -P --probe -C --csi-name
        case deregister
            printf '%s\n' -t --type -n --name -a --alloc
        case list watch
            printf '%s\n' -t --type
        case wait
            printf '%s\n' -a --alloc -t --timeout
        case mount
            echo --mountpoint
        case metrics
            echo --textfile
        case stop-post
            echo --unit
    end
end

# Prints the command (an empty line when there is none yet), then its
# positional arguments, one per line, of the words before the cursor.
function __plugfs_words
    set -l tokens (commandline -opc)
    set -l cmd
    set -l pos
    set -l i 2
    while test $i -le (count $tokens)
        set -l t $tokens[$i]
        if contains -- $t (__plugfs_valued "$cmd")
            set i (math $i + 1)
        else if not string match -q -- '-*' $t
            if test -z "$cmd"
                set cmd $t
            else
                set -a pos $t
            end
        end
        set i (math $i + 1)
    end
    echo "$cmd"
    set -q pos[1]; and printf '%s\n' $pos
end

# True when the command is one of ARGS and N positionals are typed (N: the
# first arg when it is a number).
function __plugfs_is
    set -l w (__plugfs_words)
    set -l n
    if string match -qr '^[0-9]+$' -- $argv[1]
        set n $argv[1]
        set -e argv[1]
    end
    contains -- "$w[1]" $argv; or return 1
    test -z "$n"; or test (math (count $w) - 1) -eq $n
end

# The value of the last of the options ARGS before the cursor.
function __plugfs_optval
    set -l tokens (commandline -opc)
    set -l v
    for i in (seq 2 (math (count $tokens) - 1))
        contains -- $tokens[$i] $argv; and set v $tokens[(math $i + 1)]
    end
    echo $v
end

# plugfs with the -c FILE of the command line.
function __plugfs_run
    set -l cfg (__plugfs_optval -c)
    if test -n "$cfg"
        command plugfs -c $cfg $argv 2>/dev/null
    else
        command plugfs $argv 2>/dev/null
    end
end

# (string, a builtin, would not read the function's standard input: cat does)
function __plugfs_json_values -a key
    cat | string match -ar "\"$key\": *\"[^\"]*\"" | string replace -r '.*"([^"]*)"$' '$1'
end

# The types: the config's [registry] types (indented lines continue the
# list; `;' or `#' starts a comment), the running daemon's and those it
# serves, once each.
function __plugfs_types
    set -l f (__plugfs_optval -c)
    test -n "$f"; or set f $PLUGFS_CONFIG
    test -n "$f"; or set f /etc/plugfs/plugfs.ini
    begin
        if test -r $f
            awk '
                { sub(/[;#].*/, "") }
                /^[ \t]*\[/ { s = $0; gsub(/[][ \t]/, "", s); t = 0; next }
                NF == 0 { next }
                /^[ \t]/ && t { for (i = 1; i <= NF; i++) print $i; next }
                { t = 0 }
                s == "registry" && /^types[ \t]*=/ {
                    sub(/^[^=]*=/, ""); t = 1
                    for (i = 1; i <= NF; i++) print $i
                }
            ' $f 2>/dev/null
        end
        __plugfs_run status --json | string join ' ' |
            string match -r '"types": *\[[^]]*\]' | string match -ar '"[^"]*"' |
            string match -v '"types"' | string trim -c '"'
        __plugfs_run list --json | __plugfs_json_values type
    end | sort -u
end

# The names the daemon serves under the type typed first (show, wait).
function __plugfs_names
    set -l w (__plugfs_words)
    test -n "$w[2]"; or return
    __plugfs_run list --type $w[2] --json | __plugfs_json_values name | sort -u
end

# The alloc ids of TYPE NAME (TYPE alone: under that type; neither: any).
function __plugfs_allocs -a type name
    if test -n "$type" -a -n "$name"
        __plugfs_run show $type $name --json
    else if test -n "$type"
        __plugfs_run list --type $type --json
    else
        __plugfs_run list --json
    end | __plugfs_json_values alloc | sort -u
end
function __plugfs_wait_allocs
    set -l w (__plugfs_words)
    __plugfs_allocs "$w[2]" "$w[3]"
end
function __plugfs_deregister_allocs
    __plugfs_allocs (__plugfs_optval -t --type) (__plugfs_optval -n --name)
end

complete -c plugfs -f
complete -c plugfs -s c -r -F -d 'config file'
complete -c plugfs -l help -d 'print the help'

# The commands.
complete -c plugfs -n '__plugfs_is ""' -s V -l version -d 'print the version'
complete -c plugfs -n '__plugfs_is ""' -a mount -d 'run the daemon: mount the filesystem and serve it'
complete -c plugfs -n '__plugfs_is ""' -a register -d 'register an allocation of a plugin'
complete -c plugfs -n '__plugfs_is ""' -a deregister -d 'remove a registration, or every one of an alloc'
complete -c plugfs -n '__plugfs_is ""' -a list -d 'list the registered plugins'
complete -c plugfs -n '__plugfs_is ""' -a show -d 'show the registrations of one plugin'
complete -c plugfs -n '__plugfs_is ""' -a wait -d 'wait until a plugin has an active registration'
complete -c plugfs -n '__plugfs_is ""' -a watch -d 'print registry events as they happen'
complete -c plugfs -n '__plugfs_is ""' -a status -d 'show what the running daemon serves'
complete -c plugfs -n '__plugfs_is ""' -a reload -d 'have the daemon read its config again'
complete -c plugfs -n '__plugfs_is ""' -a metrics -d "print the daemon's metrics (Prometheus text format)"
complete -c plugfs -n '__plugfs_is ""' -a state -d 'import, dump or check the state file (offline)'
complete -c plugfs -n '__plugfs_is ""' -a stop-post -d 'after the daemon stopped: detach its mount unless a restart follows'
complete -c plugfs -n '__plugfs_is ""' -a version -d 'print the version of plugfs'
complete -c plugfs -n '__plugfs_is ""' -a help -d 'print the usage'

# mount
complete -c plugfs -n '__plugfs_is mount' -l mountpoint -x -a '(__fish_complete_directories)' -d 'mount here instead of [mount] mountpoint'
complete -c plugfs -n '__plugfs_is mount' -l keep-mount -d 'leave the mount for the next start when it is in the fd store'
complete -c plugfs -n '__plugfs_is mount' -l debug -d 'debug logging and libfuse request tracing'

# register
complete -c plugfs -n '__plugfs_is register' -s t -l type -x -a '(__plugfs_types)' -d 'plugin type (repeat for a monolith)'
complete -c plugfs -n '__plugfs_is register' -s n -l name -x -d 'plugin name'
complete -c plugfs -n '__plugfs_is register' -s a -l alloc -x -d 'allocation id'
complete -c plugfs -n '__plugfs_is register' -s s -l socket -r -F -d "absolute path of the allocation's socket"
complete -c plugfs -n '__plugfs_is register' -s V -l version -x -d 'plugin version'
complete -c plugfs -n '__plugfs_is register' -s k -l kind -x -a 'controller node monolith' -d 'plugin kind'
complete -c plugfs -n '__plugfs_is register' -s o -l option -x -d 'an option K=V'
complete -c plugfs -n '__plugfs_is register' -s P -l probe -x -a 'none connect csi' -d 'how to probe this allocation'
complete -c plugfs -n '__plugfs_is register' -s C -l csi-name -x -d 'the plugin name GetPluginInfo must answer'
complete -c plugfs -n '__plugfs_is register deregister' -s q -l quiet -d 'print nothing on success'

# deregister
complete -c plugfs -n '__plugfs_is deregister' -s t -l type -x -a '(__plugfs_types)' -d 'plugin type'
complete -c plugfs -n '__plugfs_is deregister' -s n -l name -x -d 'plugin name'
complete -c plugfs -n '__plugfs_is deregister' -s a -l alloc -x -a '(__plugfs_deregister_allocs)' -d 'allocation id'

# list, watch, show, wait
complete -c plugfs -n '__plugfs_is list watch' -s t -l type -x -a '(__plugfs_types)' -d 'only this type'
complete -c plugfs -n '__plugfs_is list watch show status reload version' -l json -d 'JSON output'
complete -c plugfs -n '__plugfs_is reload' -l pid -x -a '(__fish_complete_pids)' -d 'the daemon process whose control socket to ask'
complete -c plugfs -n '__plugfs_is 0 show wait' -a '(__plugfs_types)'
complete -c plugfs -n '__plugfs_is 1 show wait' -a '(__plugfs_names)'
complete -c plugfs -n '__plugfs_is wait' -s a -l alloc -x -a '(__plugfs_wait_allocs)' -d 'wait until this alloc is the active one'
complete -c plugfs -n '__plugfs_is wait' -s t -l timeout -x -d 'give up after S seconds'

# metrics, stop-post
complete -c plugfs -n '__plugfs_is metrics' -l textfile -r -F -d 'write FILE (mode 0644) instead of printing'
complete -c plugfs -n '__plugfs_is stop-post' -l unit -x -d "the service's unit name"

# state import|dump|check
complete -c plugfs -n '__plugfs_is 0 state' -a import -d 'import a legacy registry JSON file'
complete -c plugfs -n '__plugfs_is 0 state' -a dump -d 'print every plugin and its registrations'
complete -c plugfs -n '__plugfs_is 0 state' -a check -d 'check the state file'
function __plugfs_state_is -a sub n
    set -l w (__plugfs_words)
    test "$w[1]" = state -a "$w[2]" = "$sub"; or return 1
    test -z "$n"; or test (math (count $w) - 2) -eq $n
end
complete -c plugfs -n '__plugfs_state_is import 0' -F
complete -c plugfs -n '__plugfs_state_is dump' -l json -d 'JSON output'
