# What Touchstone's installers share (scripts/install-daemon,
# scripts/install-secret-service, scripts/install-deps): their messages, the
# options every one of them takes, the dry run, and the checks on a path
# that ends up in a unit file. Sourced, never run; bash only.
#
# The installer sets, before sourcing:
#   installer   the name its messages start with ("install-daemon")
# and defines usage() (its help text) when it parses arguments.
# After parse_arguments, `mode` is "install" or "uninstall" and `dry` is 1
# for --dry-run, else 0.

mode="install"
dry=0

say() { printf '%s: %s\n' "$installer" "$*"; }
warn() { printf '%s: warning: %s\n' "$installer" "$*" >&2; }
die() { printf '%s: error: %s\n' "$installer" "$*" >&2; exit 1; }
# usage_error TEXT: the mistake and the help text on stderr, exit 64 (EX_USAGE).
usage_error() { printf '%s: %s\n' "$installer" "$*" >&2; usage >&2; exit 64; }

have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
# as_root COMMAND...: runs it, through sudo unless this is root.
as_root() { if is_root; then "$@"; else sudo "$@"; fi; }

# The installer's own options, declared before parse_arguments:
#   takes_value --NAME VARIABLE WHAT   --NAME VALUE and --NAME=VALUE set VARIABLE
#                                      ("--NAME needs WHAT" when VALUE is missing)
#   takes_flag --NAME VARIABLE         --NAME sets VARIABLE to 1
declare -A option_variable=() option_what=() flag_variable=()
takes_value() { option_variable[$1]="$2"; option_what[$1]="$3"; }
takes_flag() { flag_variable[$1]="$2"; }

# parse_arguments ARGUMENTS...: the declared options, and the ones every
# installer takes: --uninstall, --dry-run, -h / --help.
parse_arguments() {
    local name
    while [ $# -gt 0 ]; do
        case "$1" in
            --uninstall) mode="uninstall"; shift ;;
            --dry-run) dry=1; shift ;;
            -h | --help) usage; exit 0 ;;
            --*=*)
                name="${1%%=*}"
                [ -n "${option_variable[$name]+set}" ] || usage_error "unknown argument '$1'"
                printf -v "${option_variable[$name]}" '%s' "${1#*=}"
                shift
                ;;
            *)
                if [ -n "${option_variable[$1]+set}" ]; then
                    [ $# -ge 2 ] || usage_error "$1 needs ${option_what[$1]}"
                    printf -v "${option_variable[$1]}" '%s' "$2"
                    shift 2
                elif [ -n "${flag_variable[$1]+set}" ]; then
                    printf -v "${flag_variable[$1]}" '%s' 1
                    shift
                else
                    usage_error "unknown argument '$1'"
                fi
                ;;
        esac
    done
}

# require_plain_path OPTION VALUE: VALUE goes into a unit file's Exec line
# and a sed expression, so it must be an absolute path of plain characters.
require_plain_path() {
    case "$2" in
        /*) ;;
        *) usage_error "$1 needs an absolute path, not '$2'" ;;
    esac
    if [[ ! "$2" =~ ^/[A-Za-z0-9._/+-]*$ ]]; then
        usage_error "$1 may hold only letters, digits and . _ / + - ('$2')"
    fi
}
