import PlatformSupport
import Foundation
import Synchronization

/// A device opened ahead of the engine that will play on it (`AudioEngine.warmUpDevice`), so that
/// opening it — ~4 ms through a sound server's ALSA plugin — overlaps a program's other start-up
/// work (reading its arguments, opening the first file, making the player). Only opened and
/// configured: nothing is written to it, so nothing is heard before `play()`.
///
/// One at a time per process; the engine takes it if it asks for the same device with the same
/// request, and it is closed otherwise.
enum WarmDevice {
    private final class Pending: @unchecked Sendable {
        // @unchecked: `result` is written once under `condition`, then only read under it.
        let name: String
        let fallback: String?
        let request: PCMRequest
        let condition = NSCondition()
        var result: Result<any AudioOutput, AudioOutputError>?

        init(name: String, fallback: String?, request: PCMRequest) {
            self.name = name
            self.fallback = fallback
            self.request = request
        }
    }

    private static let pending = Mutex<Pending?>(nil)
    /// How many engines started on a warmed-up device (for the tests).
    static let taken = Atomic<Int>(0)

    /// Starts opening `name` (or `fallback`, when `name` does not open) for `request` on a thread
    /// of its own, after `first` has run there: the thread `runner` runs it on when it takes it,
    /// else a new one.
    static func begin(name: String, fallback: String? = nil, request: PCMRequest, first: @escaping @Sendable () -> Void = {},
                      runner: AudioEngine.ThreadRunner? = nil) {
        let opening = Pending(name: name, fallback: fallback, request: request)
        pending.withLock { $0 = opening }
        let job: @Sendable () -> Void = {
            first()
            let result = Result { () throws(AudioOutputError) in try AudioOutputs.open(name, fallback: fallback, request: request) }
            opening.condition.lock()
            opening.result = result
            opening.condition.broadcast()
            opening.condition.unlock()
        }
        if let runner, runner(job) { return }
        // A plain pthread, started on another CPU than the caller's, which goes on with its own
        // start-up work: on the caller's CPU it would wait for the scheduler to move it.
        PlatformThread(name: "musickit-warm", startsOnAnotherCPU: true, body: job).detach()
    }

    /// Whether a device is being warmed up (or waits, opened, to be taken).
    static var isPending: Bool { pending.withLock { $0 != nil } }

    /// The warmed-up device, when one was opened for `name` (with `fallback`) and `request`
    /// (waiting for its open to finish); nil otherwise, and a device warmed up for something
    /// else is closed.
    static func take(name: String, fallback: String? = nil, request: PCMRequest) -> (any AudioOutput)? {
        guard let opening = pending.withLock({ pending in defer { pending = nil }; return pending }) else { return nil }
        opening.condition.lock()
        while opening.result == nil { opening.condition.wait() }
        let result = opening.result
        opening.result = nil
        opening.condition.unlock()
        // Failed, or another device: the engine opens its own (and reports its own error).
        guard case .success(let device)? = result else { return nil }
        guard opening.name == name, opening.fallback == fallback, opening.request == request else {
            device.close()
            return nil
        }
        taken.add(1, ordering: .relaxed)
        return device
    }
}
