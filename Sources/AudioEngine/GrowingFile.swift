import Foundation
import Synchronization

/// A file still being written by a download, which the decoder reads as it grows: a read past
/// the bytes written so far waits for more, until the writer finishes or fails. So a catalog
/// preview starts playing once its first packets have arrived, not when all of it has.
///
/// The writer registers the file under the path it will have once complete (`path`) and writes
/// to `partialPath`, which it renames to `path` when done: a crash leaves no partial file
/// under the final name.
///
/// Thread safety: any thread. The waits are the decoder thread's (never the audio thread's).
package final class GrowingFile: @unchecked Sendable {
    // @unchecked: the state is behind `condition`.
    package let path: String
    package let partialPath: String
    private let condition = NSCondition()
    private var written = 0
    private var total: Int?
    private var finished = false
    private var failure: String?

    private static let registry = Mutex<[String: GrowingFile]>([:])

    /// The file being written for `path`, nil when none is (the file is complete, or absent).
    package static func growing(_ path: String) -> GrowingFile? {
        registry.withLock { $0[path] }
    }

    /// Registers a download of `path` into `partialPath` (which must exist, maybe empty).
    package static func begin(path: String, partialPath: String) -> GrowingFile {
        let file = GrowingFile(path: path, partialPath: partialPath)
        registry.withLock { $0[path] = file }
        return file
    }

    private init(path: String, partialPath: String) {
        self.path = path
        self.partialPath = partialPath
    }

    /// `bytes` are now written; `total` is the length the file will have, when known.
    package func wrote(_ bytes: Int, of total: Int?) {
        condition.lock()
        written = bytes
        self.total = total
        condition.broadcast()
        condition.unlock()
    }

    /// The writer is done: complete (`failure` nil; the partial file renamed to `path`
    /// already), or failed with the reason. Readers waiting are woken; new opens read `path`.
    package func finish(failure: String?) {
        condition.lock()
        finished = true
        self.failure = failure
        condition.broadcast()
        condition.unlock()
        GrowingFile.registry.withLock { registry in
            if registry[path] === self { registry[path] = nil }
        }
    }

    package struct Progress: Sendable {
        package let written: Int
        package let total: Int?
        package let finished: Bool
        package let failure: String?
    }

    /// Waits until more than `offset` bytes are written or the writer is done.
    package func waitForBytes(beyond offset: Int) -> Progress {
        condition.lock()
        defer { condition.unlock() }
        while written <= offset && !finished { condition.wait() }
        return Progress(written: written, total: total, finished: finished, failure: failure)
    }

    /// Where the writing stands now.
    package var progress: Progress {
        condition.lock()
        defer { condition.unlock() }
        return Progress(written: written, total: total, finished: finished, failure: failure)
    }
}
