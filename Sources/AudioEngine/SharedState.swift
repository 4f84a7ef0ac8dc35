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
    /// A device error (negative errno) the audio thread acts on as if its next write had
    /// returned it: how tests drive the xrun recovery on a device that never fails.
    let simulatedDeviceError = Atomic<Int>(0)
    // Where a start's time goes (see AudioEngineStatistics.StartTimings), nanoseconds.
    /// When the last command was sent (CLOCK_MONOTONIC), stamped by the control side.
    let commandSentAt = Atomic<UInt64>(0)
    let lastCommandWake = Atomic<UInt64>(0)
    let lastDrop = Atomic<UInt64>(0)
    let lastPrepare = Atomic<UInt64>(0)
    let lastStartWrite = Atomic<UInt64>(0)
    let lastStart = Atomic<UInt64>(0)

    @inline(__always)
    func publishPosition(token: UInt64?, frame: Int, playedFrames played: Int) {
        let sequence = positionSequence.load(ordering: .relaxed)
        positionSequence.store(sequence &+ 1, ordering: .sequentiallyConsistent)
        positionHasToken.store(token != nil, ordering: .sequentiallyConsistent)
        positionToken.store(token ?? 0, ordering: .sequentiallyConsistent)
        positionFrame.store(frame, ordering: .sequentiallyConsistent)
        playedFrames.store(played, ordering: .sequentiallyConsistent)
        positionSequence.store(sequence &+ 2, ordering: .sequentiallyConsistent)
    }

    /// A consistent (token, frame) pair.
    func readPosition() -> (token: UInt64?, frame: Int) {
        while true {
            let before = positionSequence.load(ordering: .sequentiallyConsistent)
            if before & 1 == 1 { continue }
            let hasToken = positionHasToken.load(ordering: .sequentiallyConsistent)
            let token = positionToken.load(ordering: .sequentiallyConsistent)
            let frame = positionFrame.load(ordering: .sequentiallyConsistent)
            if positionSequence.load(ordering: .sequentiallyConsistent) == before {
                return (hasToken ? token : nil, frame)
            }
        }
    }
}
