import Glibc
import Synchronization

/// One thing to play: a local audio file, identified in the engine by a token, or an entry
/// already known not to play (the engine skips it and reports why, as for a broken file).
public struct AudioEntry: Sendable, Hashable {
    /// Identifies an entry in events and positions; unique within one queue.
    public struct Token: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public var description: String { "#\(rawValue)" }
    }

    /// What the entry plays.
    public enum Source: Sendable, Hashable {
        /// A local audio file (WAV, FLAC, Ogg Vorbis, Opus, MP3, ...).
        case file(path: String)
        /// Nothing: the entry cannot play, for this reason (said in `entryFailed`).
        case unplayable(reason: String)
    }

    public let token: Token
    public let source: Source
    /// Where in the file playback starts, in seconds (nil: the beginning).
    public var startTime: Double?
    /// Where in the file playback ends, in seconds (nil: the end).
    public var endTime: Double?
    /// An amplitude factor for the whole entry (loudness normalization: `ReplayGain.amplitude`),
    /// applied to the decoded samples before they are mixed or converted. A constant per entry,
    /// so an entry's dynamics and a gapless album's boundaries (all its entries at the album's
    /// gain) are untouched. 1, the default, is bit-exact.
    public var gain: Float
    /// Loudness normalization from the file's ReplayGain values (`knownLoudness`, else its tags,
    /// read when the entry opens), applied on top of `gain` (`.off`, the default, reads nothing).
    public var normalization: LoudnessNormalization
    /// The file's ReplayGain values when they are known before it opens — its tags as read
    /// before, or gains from its measurement (`LoudnessMeasurement.replayGain`) — so that the
    /// entry's open does not read them (through FFmpeg, whose first load in a process is tens of
    /// milliseconds on the way to a first sound); nil: read from the file's tags.
    public var knownLoudness: LoudnessTags?

    public init(token: Token, source: Source, startTime: Double? = nil, endTime: Double? = nil, gain: Float = 1,
                normalization: LoudnessNormalization = .off) {
        self.token = token
        self.source = source
        self.startTime = startTime
        self.endTime = endTime
        self.gain = gain.isFinite ? max(0, gain) : 1
        self.normalization = normalization
        knownLoudness = nil
    }

    /// An entry that plays the file at `path`.
    public init(token: Token, path: String, startTime: Double? = nil, endTime: Double? = nil, gain: Float = 1,
                normalization: LoudnessNormalization = .off) {
        self.init(token: token, source: .file(path: path), startTime: startTime, endTime: endTime, gain: gain,
                  normalization: normalization)
    }

    /// The file the entry plays (nil when it cannot play).
    public var path: String? {
        if case .file(let path) = source { path } else { nil }
    }
}

/// Supplies the engine's queue lazily: the engine asks for the entry after (or before) the
/// one it has, when it needs it, so a queue of any length costs nothing up front.
///
/// Thread safety: called from the engine's decoder thread and from the thread that calls
/// `prepare`/`play`; implementations must be thread-safe. Never called on the audio thread.
public protocol AudioEntryProvider: AnyObject, Sendable {
    /// The entry after `token`, or the first entry when `token` is nil; nil at the end.
    func entry(after token: AudioEntry.Token?) -> AudioEntry?
    /// The entry before `token`; nil at the start.
    func entry(before token: AudioEntry.Token) -> AudioEntry?
    /// The entry `token` names (to seek in an entry the decoder has moved past). The default
    /// finds it as the entry after the one before it.
    func entry(withToken token: AudioEntry.Token) -> AudioEntry?
    /// How many entries the queue has, when known (nil by default): the engine tries at most
    /// this many one after another for one that opens, so that a queue that repeats with
    /// nothing playable ends instead of going round for good.
    var entryCount: Int? { get }
}

extension AudioEntryProvider {
    public var entryCount: Int? { nil }

    public func entry(withToken token: AudioEntry.Token) -> AudioEntry? {
        let candidate = entry(after: entry(before: token)?.token)
        return candidate?.token == token ? candidate : nil
    }
}

/// An `AudioEntryProvider` over a list of files, for the CLI and tests.
public final class AudioEntryList: AudioEntryProvider {
    private let entries: [AudioEntry]
    private let indexByToken: [AudioEntry.Token: Int]

    /// Entries for `paths`, with tokens 1, 2, 3, ...
    public convenience init(paths: [String]) {
        self.init(entries: paths.enumerated().map { index, path in
            AudioEntry(token: .init(rawValue: UInt64(index + 1)), path: path)
        })
    }

    public init(entries: [AudioEntry]) {
        self.entries = entries
        indexByToken = Dictionary(entries.enumerated().map { ($1.token, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public var count: Int { entries.count }
    public var entryCount: Int? { entries.count }

    public func entry(after token: AudioEntry.Token?) -> AudioEntry? {
        guard let token else { return entries.first }
        guard let index = indexByToken[token], index + 1 < entries.count else { return nil }
        return entries[index + 1]
    }

    public func entry(before token: AudioEntry.Token) -> AudioEntry? {
        guard let index = indexByToken[token], index > 0 else { return nil }
        return entries[index - 1]
    }
}

/// What the engine reports, in the order it happens.
public enum AudioEngineEvent: Sendable, Equatable {
    /// The entry's first frame (or the frame playback resumed at) reached the device's output:
    /// it is being heard now, not merely decoded. `streamFrame` counts frames heard since the
    /// stream opened.
    case entryStarted(AudioEntry.Token, streamFrame: Int)
    /// While nothing is heard (paused, or prepared), a skip or seek put this entry at the output:
    /// it is the first heard when playback starts or resumes (`entryStarted` follows then).
    case entryCued(AudioEntry.Token)
    /// The entry's last frame was heard and the next one (if any) follows without a gap.
    case entryFinished(AudioEntry.Token)
    /// The entry could not be played (or stopped early); the queue moves on.
    case entryFailed(AudioEntry.Token, DecoderError)
    /// The decoder did not keep up: silence was played. `total` counts them since the stream opened.
    case underrun(total: Int)
    /// The device ran dry or was suspended and was recovered. `total` counts them.
    case xrun(total: Int)
    /// The last entry was heard to its end; the stream is stopped.
    case queueFinished
    /// The device failed and playback stopped.
    case deviceFailed(AudioOutputError)
    /// Another program (the desktop's mixer) set the stream's volume at the sound server: the
    /// engine's `volume` is this now (0...1; above 1 when set past 100 % there).
    case volumeChanged(Double)
}

/// Where playback is, as heard at the device's output.
public struct AudioEnginePosition: Sendable, Equatable {
    /// The entry being heard, nil before the first frame is heard.
    public var token: AudioEntry.Token?
    /// Frames of that entry heard so far, at the stream's sample rate.
    public var frame: Int
    /// The stream's sample rate.
    public var sampleRate: Int

    public var seconds: Double { sampleRate > 0 ? Double(frame) / Double(sampleRate) : 0 }
}

/// The engine's playback status.
public enum AudioEngineStatus: Sendable, Equatable {
    /// No stream is open.
    case stopped
    /// The stream is open and its buffer holds the first frames; `play()` starts it.
    case prepared
    case playing
    case paused
    /// The queue was played to its end.
    case finished
}

/// Settings for an engine. The defaults aim at low latency on a desktop sound server.
public struct AudioEngineConfiguration: Sendable, Equatable {
    /// ALSA PCM name: `default` (on a desktop, PipeWire or PulseAudio), `pulse`, `hw:0,0`,
    /// `file:FILE=/tmp/out.raw,FORMAT=raw`, `null`, ...; or `pulseaudio` / `pulseaudio:SINK`: a
    /// stream on the PulseAudio (or PipeWire) server through libpulse, without ALSA.
    public var deviceName: String = "default"
    /// The device to open instead when `deviceName` cannot be opened; nil (the default): the
    /// error is reported. The automatic choice (`pulseaudio` when a server's socket is there)
    /// falls back to ALSA's `default`, as desktop players go from one output to the next.
    public var fallbackDeviceName: String?
    /// The stream's rate; nil takes the first entry's rate. Entries at another rate are converted.
    public var sampleRate: Int?
    /// Channels of the stream; mono entries are duplicated, wider ones mixed down.
    public var channelCount: Int = 2
    /// Device sample formats to try, in order.
    public var sampleFormats: [PCMSampleFormat] = [.int16, .int32, .float32]
    /// The engine's render period: decoded frames are converted and written in whole periods of
    /// this, and a start, skip or seek writes as few as one. A duration, so that a stream at a
    /// higher rate keeps the same timing, counted as the power of two frames at or above it (5 ms:
    /// 256 frames at 44.1 and 48 kHz, 512 at 96 kHz). It is not the device's period (see
    /// `refillDuration`): it sets how finely the engine starts, not how often it wakes.
    public var periodDuration: Duration = .milliseconds(5)
    /// What the device buffers in steady playback (33,075 frames at 44.1 kHz). Deep, so that the
    /// audio thread, libpulse and the sound server wake a few times a second instead of hundreds
    /// (the sound server renders its sink up to the buffer less two refills ahead, or, through
    /// ALSA's pulse plugin, a refill ahead), and a stalled decoder or a loaded machine is ridden
    /// out. 500 ms with 90 ms refills cost ALSA's pulse plugin and the server 1.2× MPD's CPU;
    /// 750 ms with 180 ms refills, less than MPD's on every output (Benchmarks/RESULTS.md, "Deep buffer"). Control does not
    /// wait for it: starts write `startBufferDuration` and start at once, skips, seeks and pauses
    /// drop or flush what is queued (the server rewinds what it had mixed ahead), and what is
    /// heard is what was written less the device's delay (Benchmarks/RESULTS.md, "Deep buffer").
    public var bufferDuration: Duration = .milliseconds(750)
    /// The device's period: the audio thread refills the buffer when this much of it has room
    /// (ALSA's period and `avail_min`, the pulse stream's `minreq`), asked for as the power of two
    /// frames nearest to it (8,192 frames at 44.1 and 48 kHz): ~5 wake-ups a second. PipeWire
    /// takes a stream's period as its graph's latency, within its quantum limits.
    public var refillDuration: Duration = .milliseconds(180)
    /// The least a start (and a skip or a seek) writes before it starts the device. It writes up
    /// to the device's period when that much is decoded (ALSA's pulse plugin plays a stream from
    /// a period, whatever the start threshold), the rest of the buffer following as the decoder
    /// delivers it: a start does not wait for a deep buffer's worth of decoding. Also the floor
    /// below which the engine pads with silence when the decoder is late (an underrun), rather
    /// than letting the device run dry: above it, it waits for the decoder. 50 ms rode out the
    /// 25 ms stalls measured under load on a shared 2-core VM (Benchmarks/RESULTS.md, "The device
    /// buffer: 50 ms"), where 23 ms did not.
    public var startBufferDuration: Duration = .milliseconds(50)
    /// Decoded audio kept ahead of the device, in frames: 8.9 s at 44.1 kHz (3 MB), so playback
    /// rides out a decoder held up for seconds (slow storage, a network mount, a spun-down
    /// disk, a starved CPU) without a dropout.
    public var ringCapacityInFrames: Int = 393_216
    /// Frames of the next entry decoded ahead so a skip starts at once.
    public var prerollSizeInFrames: Int = 8_192
    /// Frames the decoder reads per step.
    public var decodeChunkInFrames: Int = 4_096
    /// SCHED_FIFO priority asked for the audio thread; nil to not ask.
    public var realtimePriority: Int32? = 70
    /// What the audio thread does when the decoder has nothing ready for a running device.
    public var underrunBehavior: UnderrunBehavior = .insertSilence
    /// How long a paused stream keeps its device. Past it, the player (`ApplicationMusicPlayer`)
    /// closes the stream, so a player left paused costs neither the CPU nor the sound server
    /// anything (ALSA's pulse plugin kept waking ~2.6 times a second for a paused stream), and
    /// `play()` opens it again where it was paused: a cold start instead of a resume. nil: kept
    /// until stopped. `MUSICKIT_PAUSED_RELEASE_SECONDS` sets it for the players the programs
    /// make (`ApplicationMusicPlayer.defaultEngineConfiguration`).
    public var releaseWhenPausedAfter: Duration? = .seconds(30)

    public enum UnderrunBehavior: Sendable, Equatable {
        /// Play silence and count an underrun: keeps a real-time device (speakers, a sound
        /// server) running.
        case insertSilence
        /// Write nothing until frames are ready: for devices without a clock (`null`, `file`
        /// over `null`) that render offline, so the output is exactly the decoded stream.
        case waitForData
    }

    public init(deviceName: String = "default") {
        self.deviceName = deviceName
    }
}

extension AudioEngineConfiguration {
    /// What the device is asked for, for a stream at `sampleRate`.
    func pcmRequest(sampleRate: Int) -> PCMRequest {
        let period = Self.powerOfTwo(nearest: Self.frames(in: refillDuration, at: sampleRate))
        return PCMRequest(sampleRate: sampleRate, channelCount: channelCount, sampleFormats: sampleFormats,
                          periodSizeInFrames: period,
                          bufferSizeInFrames: max(Self.frames(in: bufferDuration, at: sampleRate), 2 * period),
                          startThresholdInFrames: startBufferFrames(at: sampleRate),
                          realtimePriority: realtimePriority)
    }

    /// The render period at `sampleRate` (see `periodDuration`).
    func renderPeriodFrames(at sampleRate: Int) -> Int {
        Self.powerOfTwo(atLeast: Self.frames(in: periodDuration, at: sampleRate))
    }

    /// What a start writes at `sampleRate` (see `startBufferDuration`).
    func startBufferFrames(at sampleRate: Int) -> Int { Self.frames(in: startBufferDuration, at: sampleRate) }

    /// The smallest power of two at or above `count` (at least one).
    static func powerOfTwo(atLeast count: Int) -> Int {
        count <= 1 ? 1 : 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount)
    }

    /// The power of two nearest to `count` (the larger one when halfway; at least one).
    static func powerOfTwo(nearest count: Int) -> Int {
        let above = powerOfTwo(atLeast: count)
        return above > 1 && count - above / 2 < above - count ? above / 2 : above
    }

    /// Frames that last `duration` at `sampleRate`, rounded to the nearest (at least one).
    static func frames(in duration: Duration, at sampleRate: Int) -> Int {
        let (seconds, attoseconds) = duration.components
        let frames = (Double(seconds) + Double(attoseconds) * 1e-18) * Double(sampleRate)
        return max(1, Int(frames.rounded()))
    }
}

/// Counters and facts about the open stream.
public struct AudioEngineStatistics: Sendable, Equatable {
    /// What the device agreed to; nil when no stream is open.
    public var device: PCMConfiguration?
    /// The device the stream is open on: the configuration's, or its fallback.
    public var deviceName: String?
    /// Whether the audio thread runs with SCHED_FIFO.
    public var isRealtime: Bool
    /// Times the decoder was late and silence was written instead (each run of silence once).
    public var underruns: Int
    /// Frames of silence written because the decoder was late (`underruns` in time).
    public var underrunSilenceFrames: Int = 0
    /// Times the device ran dry or was suspended and was recovered.
    public var xruns: Int
    /// Frames from a write to its sound at the output, as the device reported it last.
    public var latencyInFrames: Int
    /// Where skips to the next entry found its first frames.
    public var skips: SkipSources
    /// Where the last start's time went, on the audio thread.
    public var startTimings = StartTimings()

    /// The audio thread's side of the last start, restart or skip, in nanoseconds: from the
    /// command being sent to the audio thread taking it, and each device call it made.
    public struct StartTimings: Sendable, Equatable {
        /// Command sent (control side) → taken by the audio thread (eventfd wake-up).
        public var commandWake: UInt64 = 0
        /// `snd_pcm_drop`: what the device held is discarded (skips, seeks).
        public var drop: UInt64 = 0
        /// `snd_pcm_prepare`: the stream set up again (for the pulse plugin, a new stream).
        public var prepare: UInt64 = 0
        /// The staged first frames written into the prepared device.
        public var write: UInt64 = 0
        /// `snd_pcm_start`.
        public var start: UInt64 = 0
        public init() {}
    }

    public struct SkipSources: Sendable, Equatable {
        /// Already written to the device but not yet heard: written again at once.
        public var deviceBuffer = 0
        /// Already decoded into the ring.
        public var ring = 0
        /// The preroll slot (decoded ahead for this).
        public var preroll = 0
        /// Nothing ready: waited for the decoder.
        public var decoder = 0
        public init() {}
    }
}

// MARK: - Messages between the engine's threads (all trivial values: nothing to free)

/// Where a run of frames in the ring begins (pushed by the decoder before the frames).
struct SegmentMarker {
    enum Kind: UInt8 {
        /// An entry's first frame (or its start time).
        case entryStart
        /// An entry continues at `entryFrame` (after a skip to its preroll, or a seek).
        case continuation
        /// The entry `token` could not be played; nothing of it follows.
        case failed
        /// No more entries; `ringFrame` is the end of the queue.
        case endOfQueue
    }

    var kind: Kind
    /// Absolute frame index in the ring's stream of frames.
    var ringFrame: Int
    var token: UInt64
    /// The entry's frame (stream rate) at `ringFrame`.
    var entryFrame: Int
    /// Which flush this segment belongs to; the audio thread drops segments of older epochs.
    var epoch: UInt32
    /// Reached by decoding on from the previous entry's end, not after a skip or seek.
    var isNatural: Bool
}

/// Control thread -> audio thread.
enum AudioCommand {
    case start
    case pause
    case resume
    /// `askProvider`: ignore next-entry frames already decoded and take what the provider
    /// says comes next now.
    case skipToNext(askProvider: Bool)
    case skipToPrevious
    /// Stream-rate frame within the entry being heard; `serial` is published as
    /// `EngineSharedState.appliedSeekSerial` once the position is the target's.
    case seek(frame: Int, serial: UInt64)
    /// `EngineSharedState.outputGainBits` changed: what the device holds is written again at it.
    case applyGain
    case stop
}

/// Audio thread -> decoder thread: what to decode after the audio thread dropped frames.
enum DecoderRequest {
    /// The audio thread is playing preroll slot `slot`; continue that entry after it.
    case continueAfterPreroll(slot: Int, epoch: UInt32)
    /// Decode the entry after `token` from its start.
    case next(after: UInt64, epoch: UInt32)
    /// Decode the entry before `token` from its start (or `token` itself when it is the first).
    case previous(before: UInt64, epoch: UInt32)
    /// Decode `token` from `frame` (stream rate).
    case reposition(token: UInt64, frame: Int, epoch: UInt32)
}

/// Audio thread -> event pump.
enum AudioThreadEvent {
    case primed
    case entryStarted(token: UInt64, streamFrame: Int)
    case entryCued(token: UInt64)
    case entryFinished(token: UInt64)
    case entryFailed(token: UInt64)
    case underrun(total: Int)
    case xrun(total: Int)
    case queueFinished
    case deviceFailed(code: Int32, operation: DeviceOperation)
}


/// The first frames of the next entry, decoded ahead so a skip need not wait for the decoder.
///
/// Ownership passes by `state`: the decoder fills an `empty` slot and publishes it as
/// `ready` (release); the audio thread claims a `ready` slot by compare-and-swap to `taken`
/// (acquire), plays it, and hands it back as `empty`. The decoder retracts a `ready` slot the
/// same way (ready -> empty); whoever wins the swap owns the slot.
final class PrerollSlot: @unchecked Sendable {
    static let empty = 0
    static let ready = 1
    static let taken = 2

    let state = Atomic<Int>(PrerollSlot.empty)
    let capacityInFrames: Int
    let channelCount: Int
    let samples: UnsafeMutablePointer<Float>
    /// Written by the owner only (see `state`).
    var frameCount = 0
    var token: UInt64 = 0
    /// The entry frame (stream rate) of the slot's first frame.
    var entryFrame = 0

    init(capacityInFrames: Int, channelCount: Int) {
        self.capacityInFrames = capacityInFrames
        self.channelCount = channelCount
        samples = .allocate(capacity: capacityInFrames * channelCount)
        samples.initialize(repeating: 0, count: capacityInFrames * channelCount)
    }

    deinit { samples.deallocate() }
}

extension Double {
    /// The largest magnitude `clampedInt` gives: 2^53, exact in a Double, and at 384 kHz
    /// ~740 years of frames, far past any time or frame count the engine meets.
    package static let largestClampedInt = 1 << 53

    /// This value rounded by `rule` to an Int, without the trap of `Int(_:)`: NaN gives 0, and
    /// values beyond ±2^53 (infinities too) give ±2^53. Every conversion of a time or a frame
    /// count that a person, a client or a file gave goes through here.
    package func clampedInt(_ rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Int {
        guard !isNaN else { return 0 }
        let limit = Double(Double.largestClampedInt)
        return Int(Swift.min(Swift.max(rounded(rule), -limit), limit))
    }

    /// Frames that `self` seconds last at `rate`, rounded, at least 0 (NaN: 0); never traps.
    package func frames(at rate: Int) -> Int { Swift.max(0, (self * Double(rate)).clampedInt()) }
}

/// Entries tried one after another until one opens (the engine's start, the decoder's advance,
/// its preroll). A run longer than the queue went round a repeating queue with nothing playable
/// and ends there, as the queue's end (it spun for good, under the engine's lock: issue #42);
/// without a count from the provider, after `limit` entries.
struct EntryRun {
    static let limit = 10_000
    private let bound: Int
    private var tried = 0

    init(_ provider: any AudioEntryProvider) { bound = provider.entryCount.map { max($0, 1) } ?? Self.limit }

    /// Whether one more entry may be tried.
    mutating func mayTry() -> Bool {
        tried += 1
        return tried <= bound
    }
}

/// Which of a file's ReplayGain values an entry plays at (Sound Check on Apple's platforms,
/// `replay_gain_mode` in MPD), with a preamp in dB. `album` takes the track's values where the
/// file has no album gain; a file with neither plays as it is.
public enum LoudnessNormalization: Sendable, Hashable {
    case off
    case track(preampDB: Double)
    case album(preampDB: Double)
}

/// A file's ReplayGain tags (`REPLAYGAIN_TRACK_GAIN`/`_PEAK`, `REPLAYGAIN_ALBUM_GAIN`/`_PEAK` in
/// Vorbis comments, ID3v2 `TXXX` frames and MP4 freeform atoms; Opus's `R128_TRACK_GAIN` and
/// `R128_ALBUM_GAIN`, moved from −23 to ReplayGain's −18 LUFS; iTunes' `iTunNORM`, a track gain,
/// where there is no ReplayGain track gain). An Opus header's output gain is not among them: the
/// decoder applies it (libsndfile sets it on libopus), and RFC 7845's R128 gains are on top of
/// it. Gains are dB to ReplayGain 2.0's reference level; a value that is not a number, or a
/// gain beyond ±51 dB (no real song needs that: a tag of +90 dB is broken), is left out and
/// named in `ignored`.
public struct LoudnessTags: Sendable, Hashable {
    public var trackGainDB: Double?
    public var trackPeak: Double?
    public var albumGainDB: Double?
    public var albumPeak: Double?
    /// Tags present but unusable, as "NAME=value".
    public var ignored: [String] = []

    public init(trackGainDB: Double? = nil, trackPeak: Double? = nil, albumGainDB: Double? = nil, albumPeak: Double? = nil) {
        self.trackGainDB = trackGainDB
        self.trackPeak = trackPeak
        self.albumGainDB = albumGainDB
        self.albumPeak = albumPeak
    }

    /// From a file's tags by name (any case).
    init(tag: (String) -> String?) {
        let gains = -51.0...51.0, peaks = 0.0...100.0
        func number(_ name: String, range: ClosedRange<Double>) -> Double? {
            guard let text = tag(name) else { return nil }
            // "-6.52 dB", "+0.30 dB", "0.988525".
            let leading = text.split(separator: " ").first.map(String.init) ?? text
            guard let value = Double(leading.hasPrefix("+") ? String(leading.dropFirst()) : leading), range.contains(value) else {
                ignored.append("\(name)=\(text)")
                return nil
            }
            return value
        }
        func r128(_ name: String) -> Double? {
            guard let text = tag(name) else { return nil }
            // Q7.8 fixed point, dB relative to EBU R128's −23 LUFS.
            guard let value = Int(text), abs(value) <= 51 * 256 else {
                ignored.append("\(name)=\(text)")
                return nil
            }
            return Double(value) / 256 + (-18 - -23)
        }
        /// iTunes' Sound Check (`iTunNORM`: ten hex words): the gain from the larger of the first
        /// two (the channels' loudness against a reference of 1000), the peak from the larger of
        /// words 7–8 (16-bit sample values), read as beets and mediafile read them — with
        /// ReplayGain's reference.
        func soundCheck() -> (gainDB: Double, peak: Double)? {
            guard let text = tag("iTunNORM") else { return nil }
            let words = text.split(separator: " ").compactMap { UInt32($0, radix: 16) }
            guard words.count == 10, let loudest = words[0..<2].max(), loudest > 0,
                  case let gain = -10 * log10(Double(loudest) / 1000), gains.contains(gain) else {
                ignored.append("iTunNORM=\(text)")
                return nil
            }
            return (gain, Double(words[6..<8].max() ?? 0) / 32_768)
        }
        trackGainDB = number("REPLAYGAIN_TRACK_GAIN", range: gains) ?? r128("R128_TRACK_GAIN")
        trackPeak = number("REPLAYGAIN_TRACK_PEAK", range: peaks)
        if trackGainDB == nil, let soundCheck = soundCheck() {
            trackGainDB = soundCheck.gainDB
            trackPeak = soundCheck.peak > 0 ? soundCheck.peak : nil
        }
        albumGainDB = number("REPLAYGAIN_ALBUM_GAIN", range: gains) ?? r128("R128_ALBUM_GAIN")
        albumPeak = number("REPLAYGAIN_ALBUM_PEAK", range: peaks)
    }

    /// The file's values for `normalization`, as an amplitude factor (1: nothing to apply).
    public func amplitude(for normalization: LoudnessNormalization) -> Float {
        switch normalization {
        case .off: 1
        case .track(let preamp): ReplayGain.amplitude(gainDB: trackGainDB, peak: trackPeak, preampDB: preamp)
        case .album(let preamp):
            albumGainDB != nil ? ReplayGain.amplitude(gainDB: albumGainDB, peak: albumPeak, preampDB: preamp)
                : ReplayGain.amplitude(gainDB: trackGainDB, peak: trackPeak, preampDB: preamp)
        }
    }
}

/// ReplayGain's arithmetic: a loudness gain in dB, with a preamp, as an amplitude factor that the
/// entry's peak keeps from clipping.
public enum ReplayGain {
    /// ReplayGain 2.0's reference level, which its gains bring a song to.
    public static let referenceLUFS = -18.0

    /// 10^((gain + preamp)/20), lowered so that `peak` (the loudest sample, 1 at full scale) times
    /// it stays at or below 1; 1 when `gainDB` is nil (nothing known: played as it is).
    public static func amplitude(gainDB: Double?, peak: Double?, preampDB: Double = 0) -> Float {
        guard let gainDB, gainDB.isFinite else { return 1 }
        var factor = pow(10, (gainDB + (preampDB.isFinite ? preampDB : 0)) / 20)
        if let peak, peak.isFinite, peak > 0 { factor = min(factor, 1 / peak) }
        return Float(factor)
    }
}
