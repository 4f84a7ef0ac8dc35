import Synchronization

/// Values the audio thread publishes for any thread to read (position, counters).
///
/// Thread safety: written by the audio thread only, read from any thread.
/// Real-time safety: writes are plain atomic stores.
final class EngineSharedState: Sendable {
    // The heard position, published as a seqlock: odd sequence while writing.
    private let positionSequence = Atomic<UInt64>(0)
    private let positionHasToken = Atomic<Bool>(false)
    private let positionToken = Atomic<UInt64>(0)
    private let positionFrame = Atomic<Int>(0)
    /// Frames heard since the stream opened (the timeline's played position).
    let playedFrames = Atomic<Int>(0)
    /// When the position was published (CLOCK_MONOTONIC), and how many frames it may be taken to
    /// have advanced since, in real time: the audio thread wakes a few times a second with a deep
    /// buffer, so a reader in between counts on from the last position, up to the next change of
    /// entry or the end of what was written (0 while nothing plays).
    private let positionStampNanoseconds = Atomic<UInt64>(0)
    private let positionAdvanceLimitFrames = Atomic<Int>(0)
    /// The serial of the last seek whose position is published (AudioEngine.seek).
    let appliedSeekSerial = Atomic<UInt64>(0)

    /// Requests the audio thread has pushed to the decoder, and those the decoder has taken:
    /// while they differ, what the decoder is reading is obsolete (every request moves it).
    let decoderRequestsSent = Atomic<Int>(0)
    let decoderRequestsTaken = Atomic<Int>(0)

    let underruns = Atomic<Int>(0)
    let underrunSilenceFrames = Atomic<Int>(0)
    // Where skips to the next entry found its first frames (see AudioRenderer.skipToNext).
    let skipsFromDeviceBuffer = Atomic<Int>(0)
    let skipsFromRing = Atomic<Int>(0)
    let skipsFromPreroll = Atomic<Int>(0)
    let skipsWaitingForDecoder = Atomic<Int>(0)
    let xruns = Atomic<Int>(0)
    /// Frames between a write and its sound, as the device said last.
    let latencyFrames = Atomic<Int>(0)
    let isRealtime = Atomic<Bool>(false)
    /// Set by the audio thread while it waits for decoded frames: the decoder then wakes it
    /// after each write instead of letting it poll.
    let audioWantsData = Atomic<Bool>(false)
    /// Set by the decoder before it sleeps for room in the ring: the audio thread wakes it once
    /// no more than this many samples are left unread there (-1: it waits for nothing of the
    /// kind). So a decoder that filled the ring sleeps until half of it has played, seconds,
    /// instead of looking every few milliseconds.
    let decoderWaitsForUnreadAtMost = Atomic<Int>(-1)
    /// A device error (negative errno) the audio thread acts on as if its next write had
    /// returned it: how tests drive the xrun recovery on a device that never fails.
    let simulatedDeviceError = Atomic<Int>(0)
    /// The engine's own volume as an amplitude factor (`Float.bitPattern`), on outputs without a
    /// volume at the server: the audio thread scales what it writes by it (1: untouched).
    let outputGainBits = Atomic<UInt32>(Float(1).bitPattern)
    // Where a start's time goes (see AudioEngineStatistics.StartTimings), nanoseconds.
    /// When the last command was sent (CLOCK_MONOTONIC), stamped by the control side.
    let commandSentAt = Atomic<UInt64>(0)
    let lastCommandWake = Atomic<UInt64>(0)
    let lastDrop = Atomic<UInt64>(0)
    let lastPrepare = Atomic<UInt64>(0)
    let lastStartWrite = Atomic<UInt64>(0)
    let lastStart = Atomic<UInt64>(0)

    @inline(__always)
    func publishPosition(token: UInt64?, frame: Int, playedFrames played: Int, advanceLimitFrames: Int, at nanoseconds: UInt64) {
        let sequence = positionSequence.load(ordering: .relaxed)
        positionSequence.store(sequence &+ 1, ordering: .sequentiallyConsistent)
        positionHasToken.store(token != nil, ordering: .sequentiallyConsistent)
        positionToken.store(token ?? 0, ordering: .sequentiallyConsistent)
        positionFrame.store(frame, ordering: .sequentiallyConsistent)
        playedFrames.store(played, ordering: .sequentiallyConsistent)
        positionStampNanoseconds.store(nanoseconds, ordering: .sequentiallyConsistent)
        positionAdvanceLimitFrames.store(token == nil ? 0 : advanceLimitFrames, ordering: .sequentiallyConsistent)
        positionSequence.store(sequence &+ 2, ordering: .sequentiallyConsistent)
    }

    /// A consistent (token, frame) pair, counted on to `now` at `sampleRate` from when it was
    /// published (see `positionAdvanceLimitFrames`).
    func readPosition(now: UInt64 = monotonicNanoseconds(), sampleRate: Int = 0) -> (token: UInt64?, frame: Int) {
        while true {
            let before = positionSequence.load(ordering: .sequentiallyConsistent)
            if before & 1 == 1 { continue }
            let hasToken = positionHasToken.load(ordering: .sequentiallyConsistent)
            let token = positionToken.load(ordering: .sequentiallyConsistent)
            let frame = positionFrame.load(ordering: .sequentiallyConsistent)
            let stamp = positionStampNanoseconds.load(ordering: .sequentiallyConsistent)
            let limit = positionAdvanceLimitFrames.load(ordering: .sequentiallyConsistent)
            if positionSequence.load(ordering: .sequentiallyConsistent) == before {
                guard limit > 0, sampleRate > 0, now > stamp else { return (hasToken ? token : nil, frame) }
                let elapsed = Int(min(now - stamp, 10_000_000_000)) * sampleRate / 1_000_000_000
                return (hasToken ? token : nil, frame + min(elapsed, limit))
            }
        }
    }
}
