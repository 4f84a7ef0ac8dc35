import Foundation
import Observation
import Synchronization

/// A music player: its state and transport. Abstract: `ApplicationMusicPlayer` (the player in
/// the app's process) overrides every member.
///
/// Thread safety: every member may be used from any thread. Observation: `state` and the
/// queue are `Observable`; `withObservationTracking` sees their changes when the change is
/// heard (a new entry starting, playback resuming), on the thread that reports it.
public class MusicPlayer: @unchecked Sendable {
    // @unchecked: the state is behind locks in State and Queue; subclasses keep their own.

    /// What the player is doing.
    public enum PlaybackStatus: Equatable, Hashable, Sendable {
        case interrupted
        case paused
        case playing
        case seekingBackward
        case seekingForward
        case stopped
    }

    public enum RepeatMode: Equatable, Hashable, Sendable {
        case all
        case none
        case one
    }

    public enum ShuffleMode: Equatable, Hashable, Sendable {
        case off
        case songs
    }

    /// The player's observable state.
    public final class State: Observable, @unchecked Sendable {
        // @unchecked: the stored values are behind `lock`.
        private let registrar = ObservationRegistrar()
        private let lock = NSLock()
        private var _playbackStatus: PlaybackStatus = .stopped
        private var _repeatMode: RepeatMode? = MusicPlayer.RepeatMode.none
        private var _shuffleMode: ShuffleMode? = .off
        private var _playbackRate: Float = 0
        private var _audioVariant: AudioVariant?
        /// Called when the person changes repeat or shuffle (the player applies it).
        var onModeChange: (@Sendable () -> Void)?
        /// Called when the person sets the playback rate (the player applies it).
        var onRateChange: (@Sendable (Float) -> Void)?

        init() {}

        private func read<T>(_ keyPath: KeyPath<State, T>, _ value: () -> T) -> T {
            registrar.access(self, keyPath: keyPath)
            lock.lock()
            defer { lock.unlock() }
            return value()
        }

        /// Playing, paused, stopped, seeking. Changes when it is heard.
        public var playbackStatus: PlaybackStatus {
            get { read(\.playbackStatus) { _playbackStatus } }
        }

        /// Sets the status, and the rate that goes with it (1 playing, 0 paused or stopped, the
        /// seeking rate while seeking).
        func setPlaybackStatus(_ status: PlaybackStatus, rate: Float? = nil) {
            lock.lock()
            let changed = _playbackStatus != status
            lock.unlock()
            if changed {
                registrar.withMutation(of: self, keyPath: \.playbackStatus) {
                    lock.lock(); _playbackStatus = status; lock.unlock()
                }
            }
            setPlaybackRate(rate ?? (status == .playing ? 1 : 0))
        }

        public var repeatMode: RepeatMode? {
            get { read(\.repeatMode) { _repeatMode } }
            set {
                registrar.withMutation(of: self, keyPath: \.repeatMode) { lock.lock(); _repeatMode = newValue; lock.unlock() }
                onModeChange?()
            }
        }

        public var shuffleMode: ShuffleMode? {
            get { read(\.shuffleMode) { _shuffleMode } }
            set {
                registrar.withMutation(of: self, keyPath: \.shuffleMode) { lock.lock(); _shuffleMode = newValue; lock.unlock() }
                onModeChange?()
            }
        }

        /// Takes modes another process set (the system player's daemon): observers see the change;
        /// nothing is sent back.
        func setModesFromElsewhere(repeatMode: RepeatMode, shuffleMode: ShuffleMode) {
            lock.lock()
            let (repeatChanged, shuffleChanged) = (_repeatMode != repeatMode, _shuffleMode != shuffleMode)
            lock.unlock()
            if repeatChanged {
                registrar.withMutation(of: self, keyPath: \.repeatMode) { lock.lock(); _repeatMode = repeatMode; lock.unlock() }
            }
            if shuffleChanged {
                registrar.withMutation(of: self, keyPath: \.shuffleMode) { lock.lock(); _shuffleMode = shuffleMode; lock.unlock() }
            }
        }

        /// 1 while playing, 0 while paused or stopped, the seeking rate (±4) while seeking.
        /// Setting it: 0 pauses, 1 plays, another rate scans through the entry at that many
        /// times real time (negative: backward) until the rate is set to 1 or 0.
        public var playbackRate: Float {
            get { read(\.playbackRate) { _playbackRate } }
            // A rate that is not a number is ignored; scanning is at most 64 times real time.
            set { if !newValue.isNaN { onRateChange?(min(max(newValue, -64), 64)) } }
        }

        func setPlaybackRate(_ rate: Float) {
            lock.lock()
            let changed = _playbackRate != rate
            lock.unlock()
            guard changed else { return }
            registrar.withMutation(of: self, keyPath: \.playbackRate) { lock.lock(); _playbackRate = rate; lock.unlock() }
        }

        /// The audio variant of what plays: lossless for FLAC and WAV, lossy stereo otherwise.
        public var audioVariant: AudioVariant? {
            get { read(\.audioVariant) { _audioVariant } }
        }

        func setAudioVariant(_ variant: AudioVariant?) {
            lock.lock()
            let changed = _audioVariant != variant
            lock.unlock()
            guard changed else { return }
            registrar.withMutation(of: self, keyPath: \.audioVariant) { lock.lock(); _audioVariant = variant; lock.unlock() }
        }
    }

    /// The player's state (observable).
    public final let state = State()

    init() {}

    /// Whether `prepareToPlay()` (or a `play()`) has the first entry's audio in the device.
    public var isPreparedToPlay: Bool { false }

    /// Seconds into the current entry; setting it seeks.
    public var playbackTime: TimeInterval {
        get { 0 }
        set {}
    }

    /// Starts (or resumes) playback. Throws when nothing can be played.
    public func play() async throws {}

    public func pause() {}

    /// Stops playback; the queue stays.
    public func stop() {}

    /// Loads the queue's first entry into the device, so that `play()` starts at once.
    public func prepareToPlay() async throws {}

    public func skipToNextEntry() async throws {}

    /// Goes to the previous entry, or back to the start of the current one when it has played
    /// for a few seconds (as players do).
    public func skipToPreviousEntry() async throws {}

    public func restartCurrentEntry() {}

    /// Moves forward through the current entry until `endSeeking()`.
    public func beginSeekingForward() {}

    /// Moves backward through the current entry until `endSeeking()`.
    public func beginSeekingBackward() {}

    public func endSeeking() {}
}

extension MusicPlayer {
    /// How one entry gives way to the next when it ends: a gapless cut, or a crossfade.
    public enum Transition: Equatable, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
        /// The next entry starts right after the last frame of this one (gapless).
        case none
        /// The two overlap: this one fades out while the next fades in.
        case crossfade(options: CrossfadeOptions)

        /// A crossfade of the default length (6 s).
        public static let crossfade = Transition.crossfade(options: CrossfadeOptions())

        /// A crossfade of `duration` seconds (nil: the default, 6 s).
        public static func crossfade(duration: TimeInterval?) -> Transition {
            .crossfade(options: CrossfadeOptions(duration: duration))
        }

        /// How long a crossfade lasts.
        public struct CrossfadeOptions: Equatable, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
            let duration: TimeInterval?

            /// `duration` in seconds, from 1 to 12 as in the Music app's setting (nil: 6).
            public init(duration: TimeInterval? = nil) {
                self.duration = duration
            }

            static let defaultDuration: TimeInterval = 6

            /// The length in seconds the player uses.
            var seconds: TimeInterval { min(max(duration ?? CrossfadeOptions.defaultDuration, 1), 12) }

            public var description: String {
                "CrossfadeOptions(duration: \(duration.map { "\($0) s" } ?? "default"))"
            }
            public var debugDescription: String { description }
        }

        /// Seconds of overlap: 0 for `.none`.
        var overlapSeconds: TimeInterval {
            switch self {
            case .none: 0
            case .crossfade(let options): options.seconds
            }
        }

        public var description: String {
            switch self {
            case .none: "Transition.none"
            case .crossfade(let options): "Transition.crossfade(\(options))"
            }
        }
        public var debugDescription: String { description }
    }
}
