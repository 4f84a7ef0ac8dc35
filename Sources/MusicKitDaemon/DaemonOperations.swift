import PlatformSupport
import Foundation
import MusicKitCore
import Synchronization

/// The daemon's requests that change the player (a play, a skip, a queue edit), one at a time
/// in the order they came, for all its doors (the wire, MPD, MPRIS). Reads, pauses and stops
/// do not wait here: the player answers them from any thread.
///
/// A start opens its first entry and the device in its turn, and that can take long: a download
/// that has not delivered its first bytes, a sound server slow to answer. A request that has
/// waited `supersedesAfterSeconds` for its turn while a start opens supersedes it, as a later
/// press of a remote does: the opening is given up (`ApplicationMusicPlayer.cancelOpeningStart`),
/// the superseded request is answered as done, and this one takes its turn. When the start
/// given up was a play and this request neither starts nor stops playback itself (a skip, a
/// seek, a queue edit), playback is started again after it. So one client's stuck start
/// delays another's request by about that long, not for as long as the start is stuck.
final class DaemonOperations: Sendable {
    /// Whether a request decides itself whether anything plays (a play, a stop, a new queue):
    /// then a play it supersedes is not started again after it.
    enum Effect { case startsOrStops, keepsPlaying }

    /// How long a request waits behind a start that is still opening before it supersedes it:
    /// an ordinary start (a few milliseconds) is waited for.
    static let supersedesAfterSeconds = 0.1

    private let queue = DispatchQueue(label: "musickitd.operations")
    private let player: ApplicationMusicPlayer
    private let log: @Sendable (String) -> Void
    /// Starts superseded so far; changed together with the cancel (under the lock), so a start's
    /// request that ends in a cancellation can tell it was superseded.
    private let supersededStarts = Mutex(0)

    init(player: ApplicationMusicPlayer, log: @escaping @Sendable (String) -> Void) {
        self.player = player
        self.log = log
    }

    /// Runs `work` in its turn and returns what it returned; nil when `work` was a start that a
    /// later request superseded. With `waitingAtMost`, nil as well once that many seconds have
    /// passed: the work goes on, and a failure it meets later is logged as `what`'s.
    func perform<T: Sendable>(_ what: String, _ effect: Effect, waitingAtMost: Double? = nil,
                              _ work: @escaping @Sendable () throws -> T) throws -> T? {
        let outcome = Outcome<T>()
        queue.async { [self] in
            let superseded = supersededStarts.withLock { $0 }
            outcome.begun.store(true, ordering: .releasing)
            var result: Result<T?, any Error> = Result { try work() }
            if case .failure(let error) = result, error is CancellationError,
               supersededStarts.withLock({ $0 }) != superseded {
                result = .success(nil)  // its start was given up for a later request
            }
            let abandoned = outcome.state.withLock { state in
                state.result = result
                return state.abandoned
            }
            if abandoned, case .failure(let error) = result { log("\(what) failed: \(error)") }
            outcome.done.signal()
        }
        let began = DispatchTime.now()
        let deadline = waitingAtMost.map { began + $0 }
        while true {
            var wake = DispatchTime.now() + 0.025
            if let deadline { wake = min(wake, deadline) }
            if outcome.done.wait(timeout: wake) == .success { break }
            // Any start opening in the meantime (one given up may be followed by another
            // request's), until this request's own turn.
            if !outcome.begun.load(ordering: .acquiring), DispatchTime.now() >= began + Self.supersedesAfterSeconds {
                supersedeOpeningStart(for: what, effect)
            }
            if let deadline, DispatchTime.now() >= deadline {
                let result = outcome.state.withLock { state in
                    state.abandoned = state.result == nil
                    return state.result
                }
                guard let result else { return nil }
                return try result.get()
            }
        }
        return try outcome.state.withLock { $0.result! }.get()
    }

    /// Runs `work` in its turn without waiting for it (the daemon's own work: preparing the
    /// current entry, retrying a lost device).
    func async(after seconds: Double = 0, _ work: @escaping @Sendable () -> Void) {
        if seconds > 0 {
            queue.asyncAfter(deadline: .now() + seconds, execute: work)
        } else {
            queue.async(execute: work)
        }
    }

    private func supersedeOpeningStart(for what: String, _ effect: Effect) {
        let givenUp = supersededStarts.withLock { count -> ApplicationMusicPlayer.GivenUpStart? in
            let givenUp = player.cancelOpeningStart()
            if givenUp != nil { count += 1 }
            return givenUp
        }
        guard givenUp == .play, effect == .keepsPlaying else { return }
        queue.async { [player, log] in
            do {
                try waitFor { try await player.play() }
            } catch is CancellationError {
                // Superseded or stopped again.
            } catch {
                log("playing again after \(what) failed: \(error)")
            }
        }
    }
}

/// What a request handed to the operations queue came to.
private final class Outcome<T: Sendable>: Sendable {
    /// The result, and whether the caller stopped waiting before it came.
    let state = Mutex<(result: Result<T?, any Error>?, abandoned: Bool)>((nil, false))
    let begun = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
}
