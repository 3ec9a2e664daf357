"""``s3memory completion bash|zsh``: a shell completion script, written from the command line's own parser.

The script completes the commands, and each command's options (the global ones too, before or after the
command); it skips the value of an option that takes one, so ``s3memory --bucket mem l<TAB>`` completes
``ls``. Paths and other values fall back to the shell's file completion. zsh runs the bash script
through ``bashcompinit``.
"""

from __future__ import annotations

import argparse
import shlex

SHELLS = ("bash", "zsh")
_FUNCTION = "_s3memory_complete"


def options_of(parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """Every option string of ``parser``, and those that take a value."""
    every: list[str] = []
    valued: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or not action.option_strings:
            continue
        every += action.option_strings
        if action.nargs != 0:
            valued += action.option_strings
    return every, valued


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser``, by name, in the order ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _words(words: list[str]) -> str:
    return shlex.quote(" ".join(sorted(set(words))))


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion script of ``parser`` (the ``s3memory`` command line)."""
    commands = commands_of(parser)
    top, top_valued = options_of(parser)
    valued = set(top_valued)
    cases: list[str] = []
    for name, subparser in commands.items():
        options, subvalued = options_of(subparser)
        valued.update(subvalued)
        cases.append(f"        {name}) words={_words(options)} ;;")
    lines = [
        '# s3memory completion for bash: eval "$(s3memory completion bash)"',
        f"{_FUNCTION}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" command="" words="" i',
        f"    local valued={_words(sorted(valued))}",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case " $valued " in *" ${COMP_WORDS[i]} "*) ((i++)); continue ;; esac',
        '        case "${COMP_WORDS[i]}" in -*) ;; *) command="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    case "$command" in',
        f'        "") words={_words([*commands, *top])} ;;',
        *cases,
        "    esac",
        '    case " $valued " in *" ${COMP_WORDS[COMP_CWORD-1]} "*) [ "$COMP_CWORD" -gt 1 ] && return 0 ;; esac',
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        f"complete -o default -F {_FUNCTION} s3memory",
    ]
    return "\n".join(lines) + "\n"


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of ``SHELLS``)."""
    script = bash_script(parser)
    if shell == "zsh":
        return '# s3memory completion for zsh: eval "$(s3memory completion zsh)"\n' + (
            "autoload -U +X bashcompinit && bashcompinit\n" + script
        )
    return script
