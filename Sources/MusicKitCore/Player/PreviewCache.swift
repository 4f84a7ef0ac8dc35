import PlatformSupport
import AudioEngine
import Foundation
import Glibc
import Synchronization

/// Catalog previews from the network (`previews[0].url`, an `.m4a` on Apple's servers), kept
/// in `<data>/previews/` (at most `maximumBytes`; the least recently played go first).
///
/// A preview that is not there yet is downloaded on a thread of its own into `<name>.part`,
/// registered as a `GrowingFile`, so the decoder starts on the first bytes and waits for the
/// rest as it needs them; complete, it is renamed to its name. A failed download is removed
/// and the entry fails with the reason (the player skips it and says why).
///
/// Limits: the folder holds at most `maximumBytes`, and one download at most
/// `maximumPreviewBytes` (a server that never ended a preview filled 8 GB of disk in 30 s);
/// a download that nobody plays any more (its decoders closed: the player stopped, the queue
/// was cleared; `GrowingFile.isUnwanted`) stops and leaves nothing; a `.part` left by a process
/// that died is removed once it is `stalePartSeconds` old. A download started ahead for the
/// next entry that is never opened runs to its end (bounded by `maximumPreviewBytes`).
enum PreviewCache {
    static let maximumBytes = 256 << 20
    /// A preview is 30 s: ~1 MB of AAC, ~5 MB of ALAC. A download past this is not one.
    static let maximumPreviewBytes = 32 << 20
    /// A download that stalls fails in 10 s (its timeout); a `.part` untouched this long is
    /// no download's any more.
    static let stalePartSeconds = 600

    static func directory(_ environment: MusicKitEnvironment = .current) -> URL {
        environment.dataDirectory.appendingPathComponent("previews")
    }

    /// The path that plays `url`: the cached file, or one whose download starts now, stopped
    /// past `limit` bytes.
    static func file(for url: URL, environment: MusicKitEnvironment = .current, limit: Int = maximumPreviewBytes) throws -> String {
        let directory = directory(environment)
        let path = path(for: url, environment: environment)
        return try starting.withLock { _ in
            if GrowingFile.growing(path) != nil { return path }
            if access(path, R_OK) == 0 {
                utimes(path, nil)  // played now: the last to be evicted
                return path
            }
            try PrivateFiles.ensureDirectory(directory)
            removeStaleParts(in: directory)
            let partial = path + ".part"
            unlink(partial)
            try PrivateFiles.createPrivateFileIfMissing(partial)
            let growing = GrowingFile.begin(path: path, partialPath: partial)
            PlatformThread.detached(name: "musickit.preview") { download(url, growing, limit: limit) }
            return path
        }
    }

    /// Where the preview at `url` is kept (once downloaded).
    static func path(for url: URL, environment: MusicKitEnvironment = .current) -> String {
        let fileExtension = url.pathExtension.isEmpty ? "m4a" : url.pathExtension.lowercased()
        return directory(environment).appendingPathComponent(LibraryStore.id(prefix: "", url.absoluteString) + "." + fileExtension).path
    }

    /// One download starts at a time per path (a file asked for twice is downloaded once).
    private static let starting = Mutex(())

    private static func download(_ url: URL, _ growing: GrowingFile, limit: Int) {
        let descriptor = open(growing.partialPath, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            growing.finish(failure: "cannot write \(growing.partialPath): \(String(cString: strerror(errno)))")
            return
        }
        var written = 0
        do {
            defer { close(descriptor) }
            var request = HTTPRequest(url: url)
            // The decoder waits for the packet it reads: a stalled download fails in 10 s.
            request.timeoutInterval = 10
            try HTTPClient.download(request) { bytes, total in
                guard (total ?? 0) <= limit, written + bytes.count <= limit else { throw PreviewTooLarge(limit: limit) }
                guard !growing.isUnwanted else { throw PreviewUnwanted() }
                try PrivateFiles.writeAll(bytes, to: descriptor, path: growing.partialPath)
                written += bytes.count
                growing.wrote(written, of: total)
            }
            guard fsync(descriptor) == 0, rename(growing.partialPath, growing.path) == 0 else {
                throw PrivateFiles.Failure(operation: "keep", path: growing.path, code: errno)
            }
        } catch {
            unlink(growing.partialPath)
            let reason = (error as? URLError).map { "\($0.localizedDescription) (\(url.absoluteString))" } ?? "\(error)"
            growing.finish(failure: reason)
            return
        }
        growing.finish(failure: nil)
        evict(in: URL(fileURLWithPath: growing.path).deletingLastPathComponent(), keeping: growing.path)
    }

    struct PreviewUnwanted: Error, CustomStringConvertible {
        var description: String { "nobody plays the preview any more; the download was stopped" }
    }

    struct PreviewTooLarge: Error, CustomStringConvertible {
        let limit: Int
        var description: String { "the preview is larger than \(limit) bytes: not a preview; the download was stopped" }
    }

    /// Removes the `.part` files that no download of this process is writing and that nothing
    /// has touched for `stalePartSeconds` (another process's download touches its own).
    static func removeStaleParts(in directory: URL, now: Int = time(nil)) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasSuffix(".part") {
            let path = directory.appendingPathComponent(name).path
            var status = stat()
            guard stat(path, &status) == 0, now - Int(status.st_mtim.tv_sec) >= stalePartSeconds,
                  GrowingFile.growing(String(path.dropLast(".part".count))) == nil else { continue }
            unlink(path)
        }
    }

    /// Removes the least recently played previews until the folder holds at most `maximumBytes`.
    static func evict(in directory: URL, keeping kept: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        var files: [(path: String, size: Int, used: Int)] = names.filter { !$0.hasSuffix(".part") }.compactMap { name in
            let path = directory.appendingPathComponent(name).path
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            return (path, Int(status.st_size), Int(status.st_mtim.tv_sec))
        }
        var total = files.reduce(0) { $0 + $1.size }
        files.sort { $0.used < $1.used }
        for file in files where total > maximumBytes && file.path != kept && GrowingFile.growing(file.path) == nil {
            unlink(file.path)
            total -= file.size
        }
    }
}
