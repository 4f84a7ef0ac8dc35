import Foundation
import Glibc

/// The person's files: listening history, library paths, playlists, account and
/// authorizations are nobody else's business. Folders are made 0700 and files 0600 whatever
/// the umask; a file is replaced by writing an exclusively created temporary in the same
/// folder (never through a symlink), syncing it and renaming it over the old one, so a crash
/// leaves the old file or the new one, never half of one; temporaries of processes that are
/// gone are removed.
package enum PrivateFiles {
    /// A file operation that failed, with the path and the system's reason.
    package struct Failure: Error, CustomStringConvertible {
        package let operation: String
        package let path: String
        package let code: Int32

        package init(operation: String, path: String, code: Int32) {
            self.operation = operation
            self.path = path
            self.code = code
        }

        package var description: String { "cannot \(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Creates `directory` and any missing parents, and makes `directory` itself 0700.
    /// A symlink in its place is refused.
    package static func ensureDirectory(_ directory: URL) throws {
        var missing: [String] = []
        var path = directory.standardizedFileURL.path
        while !path.isEmpty && path != "/" {
            var status = stat()
            if lstat(path, &status) == 0 {
                if status.st_mode & S_IFMT == S_IFLNK && missing.isEmpty {
                    throw Failure(operation: "use the folder (it is a symbolic link)", path: path, code: ELOOP)
                }
                break
            }
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for component in missing.reversed() where mkdir(component, 0o700) != 0 && errno != EEXIST {
            throw Failure(operation: "create the folder", path: component, code: errno)
        }
        let target = directory.standardizedFileURL.path
        var status = stat()
        if lstat(target, &status) == 0, status.st_uid == getuid(), status.st_mode & 0o777 != 0o700 {
            chmod(target, 0o700)
        }
    }

    /// Makes `path` (and SQLite's `-wal`/`-shm` beside it) readable by its owner only.
    package static func restrictToOwner(_ path: String, withDatabaseCompanions: Bool = false) {
        for file in [path] + (withDatabaseCompanions ? [path + "-wal", path + "-shm", path + "-journal"] : []) {
            var status = stat()
            guard lstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid(),
                  status.st_mode & 0o077 != 0 else { continue }
            chmod(file, 0o600)
        }
    }

    /// Creates an empty file at `path` with mode 0600 when none is there, so that whatever
    /// creates it next (SQLite) inherits the mode; a symlink there is refused.
    package static func createPrivateFileIfMissing(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
            return
        }
        if errno == EEXIST {
            var status = stat()
            if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK {
                throw Failure(operation: "open (it is a symbolic link)", path: path, code: ELOOP)
            }
            return
        }
        throw Failure(operation: "create", path: path, code: errno)
    }

    /// A new temporary file beside `url`, created exclusively (O_EXCL, no symlink followed)
    /// with mode 0600: `.NAME.PID.RANDOM.SUFFIX`. The caller closes the descriptor.
    package static func makeTemporary(beside url: URL, suffix: String) throws -> (descriptor: Int32, url: URL) {
        let folder = url.deletingLastPathComponent()
        for _ in 0..<16 {
            let random = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let candidate = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(random).\(suffix)")
            let descriptor = open(candidate.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 { return (descriptor, candidate) }
            if errno != EEXIST { throw Failure(operation: "create a temporary file beside", path: url.path, code: errno) }
        }
        throw Failure(operation: "create a temporary file beside", path: url.path, code: EEXIST)
    }

    /// Replaces `url` with `data`: exclusive temporary, write, fsync, rename, fsync the folder.
    package static func writeAtomically(_ data: Data, to url: URL) throws {
        try replace(url) { descriptor in
            try data.withUnsafeBytes { try writeAll($0, to: descriptor, path: url.path) }
        }
    }

    /// Writes all of `bytes` to `descriptor`, through partial writes and interruptions.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "write", path: path, code: errno)
            }
            offset += written
        }
    }

    /// Replaces `url` with a copy of `source`, read as a stream: until the copy is complete and
    /// on disk, `url` keeps its old content.
    package static func copyAtomically(from source: URL, to url: URL) throws {
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure(operation: "read", path: source.path, code: errno) }
        defer { close(input) }
        try replace(url) { output in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = read(input, &buffer, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Failure(operation: "read", path: source.path, code: errno)
                }
                if count == 0 { break }
                try buffer.withUnsafeBytes { try writeAll(UnsafeRawBufferPointer(rebasing: $0[..<count]), to: output, path: url.path) }
            }
        }
    }

    /// Fills a new temporary beside `url` with `fill`, syncs it and renames it over `url`.
    private static func replace(_ url: URL, _ fill: (Int32) throws -> Void) throws {
        try ensureDirectory(url.deletingLastPathComponent())
        let (descriptor, temporary) = try makeTemporary(beside: url, suffix: "tmp")
        // Closed exactly once: a second close could close a descriptor another thread has
        // opened since under the same number.
        var needsClose = true
        do {
            try fill(descriptor)
            if fsync(descriptor) != 0 { throw Failure(operation: "sync", path: temporary.path, code: errno) }
            needsClose = false
            if close(descriptor) != 0 { throw Failure(operation: "close", path: temporary.path, code: errno) }
            if rename(temporary.path, url.path) != 0 { throw Failure(operation: "replace", path: url.path, code: errno) }
        } catch {
            if needsClose { close(descriptor) }
            unlink(temporary.path)
            throw error
        }
        let folder = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    /// Removes the temporaries (`.NAME.PID.….tmp`, `.NAME.PID.….building` and their SQLite
    /// companions) that processes which are gone left in `directory`.
    package static func removeStaleTemporaries(in directory: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(".") {
            guard let pid = temporaryOwner(name), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    /// The PID in a temporary's name, when it is one of ours.
    package static func temporaryOwner(_ name: String) -> pid_t? {
        var base = Substring(name)
        for companion in ["-journal", "-wal", "-shm"] where base.hasSuffix(companion) { base = base.dropLast(companion.count) }
        guard base.hasSuffix(".tmp") || base.hasSuffix(".building") else { return nil }
        let parts = base.split(separator: ".")
        // ["NAME", "ext"?, "PID", ("RANDOM")?, "tmp"]: the PID is the first all-digit part after the name.
        for part in parts.dropFirst().dropLast() where part.allSatisfy(\.isNumber) {
            return pid_t(part)
        }
        return nil
    }
}
