"""Which GIT_* variables reach the processes redline starts."""

from __future__ import annotations

from redline.gitops.gitenv import without_git_redirects


def test_variables_that_point_git_elsewhere_are_dropped() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "GIT_DIR": "/elsewhere/.git",
        "GIT_WORK_TREE": "/elsewhere",
        "GIT_INDEX_FILE": "/elsewhere/.git/index",
        "GIT_OBJECT_DIRECTORY": "/elsewhere/.git/objects",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/elsewhere/.git/objects",
        "GIT_COMMON_DIR": "/elsewhere/.git",
        "GIT_NAMESPACE": "theirs",
        "GIT_CEILING_DIRECTORIES": "/",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1",
        "GIT_CONFIG": "/elsewhere/config",
        "GIT_CONFIG_PARAMETERS": "'core.worktree'='/elsewhere'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.worktree",
        "GIT_CONFIG_VALUE_0": "/elsewhere",
        "GIT_AUTHOR_DATE": "2001-01-01T00:00:00",
        "GIT_TRACE": "1",
        "GIT_EXEC_PATH": "/usr/lib/git-core",
        "GIT_CONFIG_GLOBAL": "/home/me/.gitconfig-work",
        "GIT_CONFIG_SYSTEM": "/etc/gitconfig",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GITHUB_ACTIONS": "true",
    }
    assert without_git_redirects(environ) == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "GIT_EXEC_PATH": "/usr/lib/git-core",
        "GIT_CONFIG_GLOBAL": "/home/me/.gitconfig-work",
        "GIT_CONFIG_SYSTEM": "/etc/gitconfig",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GITHUB_ACTIONS": "true",
    }


def test_the_mapping_given_is_not_changed() -> None:
    environ = {"GIT_DIR": "/elsewhere/.git"}
    assert without_git_redirects(environ) == {}
    assert environ == {"GIT_DIR": "/elsewhere/.git"}
