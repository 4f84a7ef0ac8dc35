import Glibc

/// Starts `arguments[0]` with `arguments` and `environment` through posix_spawn: standard input
/// from `inputPath` (/dev/null unless told), standard output and error appended to `outputPath`;
/// in a session of its own when `newSession` (a daemon that outlives its starter; a terminal
/// opened as its input then becomes its controlling terminal). Returns its process ID, or the errno.
///
/// Not Foundation's `Process`: a child that closes the descriptors it inherited (musickitd,
/// pulseaudio) looks to `Process` as if it exited, and it then blocks waiting for it.
package func spawnProcess(_ arguments: [String], environment: [String: String], outputPath: String,
                          newSession: Bool, inputPath: String = "/dev/null") -> Result<pid_t, SpawnError> {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, inputPath, inputPath == "/dev/null" ? O_RDONLY : O_RDWR, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    if newSession { posix_spawnattr_setflags(&attributes, 0x80) }  // POSIX_SPAWN_SETSID (glibc; not exported to Swift)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
    return status == 0 ? .success(pid) : .failure(SpawnError(code: status))
}

package struct SpawnError: Error, CustomStringConvertible {
    package let code: Int32
    package var description: String { String(cString: strerror(code)) }
}
