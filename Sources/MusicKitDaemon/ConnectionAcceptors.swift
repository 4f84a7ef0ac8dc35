import PlatformSupport
import Glibc
import MusicKitCore
import Synchronization

/// Threads that wait in `accept` before their connection arrives, so that a new client's first
/// request is read by a thread that is already running: `musickit next` and `mpc next` each
/// connect once, and a thread created after `accept` started 0.1–3.6 ms later on a busy machine
/// (the benchmark's `musickit next` runs, 2026-12-01), which was most of what the command cost
/// beyond the skip itself.
///
/// There are always `spare` threads waiting (the caller's own, in `acceptOnThisThread`, among
/// them): the one that takes a connection starts another when it was the last one waiting, and
/// after serving goes back to waiting, or ends when enough already wait. Linux wakes one waiter
/// per connection. So 50 clients at once get 50 threads, and the daemon idles with `spare`.
///
/// At most `maximumConnections` are served at once (MPD's `max_connections`, 100 by default): a
/// connection beyond them is closed at once, so a flood of idle connections costs no more than
/// that many threads.
///
/// `shutdown(2)` on the listener ends them; it must not be closed while they live, since a
/// waiter that has not started yet would then accept on whatever socket reuses its number.
final class ConnectionAcceptors: Sendable {
    private let listener: Int32
    private let name: String
    private let spare: Int
    private let admit: @Sendable (Int32) -> Bool
    private let serve: @Sendable (Int32) -> Void
    private let failed: @Sendable (Int32) -> Void
    private let waiting = Atomic<Int>(0)
    private let serving = Atomic<Int>(0)
    /// Connections served at once, at most; more are closed on arrival.
    let maximumConnections: Int
    static let defaultMaximumConnections = 100

    /// `admit` decides whether a connection is served (refused ones are closed); `serve` serves
    /// one until its peer leaves (the descriptor is closed after it); `failed` hears about
    /// `accept` errors other than an interrupted or aborted connection.
    init(listener: Int32, name: String, spare: Int = 2, maximumConnections: Int = ConnectionAcceptors.defaultMaximumConnections,
         admit: @escaping @Sendable (Int32) -> Bool,
         serve: @escaping @Sendable (Int32) -> Void, failed: @escaping @Sendable (Int32) -> Void = { _ in }) {
        self.listener = listener
        self.name = name
        self.spare = max(1, spare)
        self.maximumConnections = max(1, maximumConnections)
        self.admit = admit
        self.serve = serve
        self.failed = failed
    }

    /// Threads waiting in `accept` now.
    var waitingThreads: Int { waiting.load(ordering: .relaxed) }

    /// Starts the waiting threads, all of them on threads of their own.
    func start() {
        for _ in 0..<spare { startWaiter() }
    }

    /// Makes the calling thread one of the waiters, for good: returns only when the listener is
    /// shut down. The others are started first.
    func acceptOnThisThread() {
        for _ in 1..<spare { startWaiter() }
        acceptLoop(staysWhenIdle: true)
    }

    private func startWaiter() {
        PlatformThread(name: name) { [self] in acceptLoop(staysWhenIdle: false) }.detach()
    }

    private func acceptLoop(staysWhenIdle: Bool) {
        waiting.add(1, ordering: .relaxed)
        while true {
            let descriptor = accept(listener, nil, nil)
            let error = errno
            let stillWaiting = waiting.subtract(1, ordering: .relaxed).newValue
            if descriptor < 0 {
                switch error {
                case EINTR, ECONNABORTED: break
                case EBADF, EINVAL, ENOTSOCK: return  // the listener was shut down or closed
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    failed(error)
                    usleep(10_000)  // out of descriptors or memory: try again once some are free
                default:
                    failed(error)
                }
                waiting.add(1, ordering: .relaxed)
                continue
            }
            if stillWaiting == 0 { startWaiter() }  // the next client finds a thread waiting
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            if serving.add(1, ordering: .relaxed).newValue <= maximumConnections, admit(descriptor) { serve(descriptor) }
            serving.subtract(1, ordering: .relaxed)
            close(descriptor)
            if staysWhenIdle {
                waiting.add(1, ordering: .relaxed)
            } else if !joinWaitersIfFew() {
                return
            }
        }
    }

    /// Counts the calling thread among the waiting ones unless `spare` already wait (then it
    /// should end): one compare-and-swap, so that threads coming back together do not all stay.
    private func joinWaitersIfFew() -> Bool {
        var count = waiting.load(ordering: .relaxed)
        while count < spare {
            let (exchanged, original) = waiting.compareExchange(expected: count, desired: count + 1, ordering: .relaxed)
            if exchanged { return true }
            count = original
        }
        return false
    }
}
