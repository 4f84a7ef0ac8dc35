import PlatformSupport
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
/// A reader that must not wait on a stalled download — an engine's decoder thread, whose
/// session is closing or which has a new request; the caller of `play()` opening the first
/// entry, when `stop()` comes — says so for its thread (`AbandonableWaits`): its waits then look
/// every 50 ms and give up once the check says so.
///
/// The writer asks `isUnwanted` as it goes: once every reader that opened the file has closed
/// it and none has opened it again for `unwantedAfterSeconds`, nobody plays it any more (the
/// player stopped, the queue was cleared) and the download may stop instead of running on.
///
/// Thread safety: any thread. The waits are the decoder thread's and, for a stream's first
/// entry, the thread that starts it (never the audio thread's).
package final class GrowingFile: @unchecked Sendable {
    // @unchecked: the state is behind `condition`.
    package let path: String
    package let partialPath: String
    private let condition = NSCondition()
    private var written = 0
    private var total: Int?
    private var finished = false
    private var failure: String?
    /// Readers that have the file open now, and when the last one closed it.
    private var readers = 0
    private var lastReaderClosed: ContinuousClock.Instant?
    /// How long a file nobody reads stays wanted: a reader that closes and opens it again (a
    /// skip back to the entry) does so well within it.
    package static let unwantedAfterSeconds = 2.0

    private static let registry = Mutex<[String: GrowingFile]>([:])
    /// Readers waiting for bytes right now, in every growing file (for the tests).
    package static let waitingReaders = Atomic<Int>(0)
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

    /// A reader opened the file (its decoder): it is wanted until the matching `readerClosed`.
    package func readerOpened() {
        condition.lock()
        readers += 1
        condition.unlock()
    }

    package func readerClosed() {
        condition.lock()
        readers -= 1
        if readers == 0 { lastReaderClosed = .now }
        condition.unlock()
    }

    /// Every reader that opened the file closed it at least `unwantedAfterSeconds` ago and none
    /// has opened it since. False while no reader has opened it yet (a download started ahead).
    package var isUnwanted: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard readers == 0, let lastReaderClosed else { return false }
        return lastReaderClosed.duration(to: .now) >= .seconds(GrowingFile.unwantedAfterSeconds)
    }

    package struct Progress: Sendable {
        package let written: Int
        package let total: Int?
        package let finished: Bool
        package let failure: String?
        /// The reader gave up waiting (its thread's abandon check said so).
        package var abandoned = false
    }

    /// Waits until more than `offset` bytes are written or the writer is done — or, on a thread
    /// with an abandon check, until the check says to give up (`abandoned`).
    package func waitForBytes(beyond offset: Int) -> Progress {
        let check = AbandonableWaits.checkOnThisThread
        GrowingFile.waitingReaders.add(1, ordering: .relaxed)
        defer { GrowingFile.waitingReaders.subtract(1, ordering: .relaxed) }
        condition.lock()
        defer { condition.unlock() }
        while written <= offset && !finished {
            guard let check else {
                condition.wait()
                continue
            }
            if check() {
                var progress = currentProgress
                progress.abandoned = true
                return progress
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        return currentProgress
    }

    /// Where the writing stands now.
    package var progress: Progress {
        condition.lock()
        defer { condition.unlock() }
        return currentProgress
    }

    /// The progress; `condition` held.
    private var currentProgress: Progress {
        Progress(written: written, total: total, finished: finished, failure: failure)
    }
}
