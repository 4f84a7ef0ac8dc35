/// One queue entry opened for decoding into the stream's format: the file's frames,
/// mapped to the stream's channels and converted to its sample rate.
///
/// The engine's decoder thread uses one per entry; it is public for tools that want the same
/// conversion (benchmarks, offline rendering).
///
/// Thread safety: one thread at a time (in the engine, the decoder thread). Real-time safety:
/// none; it reads files and allocates.
public final class EntryDecoder {
    public let entry: AudioEntry
    public let decoder: AudioFileDecoder
    private let converter: SampleRateConverter?
    public let streamRate: Int
    public let streamChannels: Int
    private let chunkFrames: Int
    /// First and end file frames to play (start and end time).
    private let firstFileFrame: Int
    private let endFileFrame: Int

    /// The entry's frame (stream rate) of the next frame this decoder produces.
    public private(set) var entryFrame = 0
    /// Stream-format samples decoded but not yet delivered (written first by `nextChunk`).
    var carry: [Float] = []
    /// A failure met decoding ahead on another thread (the engine's first chunk, decoded while
    /// its device opens), thrown by the next `nextChunk()` as if it had happened there.
    var deferredError: DecoderError?
    private var inputDone = false
    public private(set) var isFinished = false

    private let fileBuffer: UnsafeMutablePointer<Float>
    private let mappedBuffer: UnsafeMutablePointer<Float>
    private let convertedBuffer: UnsafeMutablePointer<Float>
    private let convertedCapacityInFrames: Int

    var token: UInt64 { entry.token.rawValue }
    /// The factor every sample is scaled by: the entry's `gain` times its normalization's, from
    /// the entry's known ReplayGain values, else the file's tags (1: bit-exact).
    public let gain: Float

    /// Opens `entry` for a stream of `streamRate` Hz and `streamChannels` channels
    /// (reusing `opened` when the file is already open).
    public convenience init(entry: AudioEntry, streamRate: Int, streamChannels: Int,
                            chunkFrames: Int = 4_096) throws(DecoderError) {
        try self.init(entry: entry, opened: nil, streamRate: streamRate, streamChannels: streamChannels,
                      chunkFrames: chunkFrames)
    }

    init(entry: AudioEntry, opened: AudioFileDecoder?, streamRate: Int, streamChannels: Int,
         chunkFrames: Int) throws(DecoderError) {
        self.entry = entry
        let decoder: AudioFileDecoder
        if let opened { decoder = opened } else { decoder = try AudioFileDecoder.open(entry) }
        self.decoder = decoder
        self.streamRate = streamRate
        self.streamChannels = streamChannels
        self.chunkFrames = chunkFrames
        if entry.normalization != .off, case .file(let path) = entry.source {
            let tags = entry.knownLoudness ?? AudioFileDecoder.loudnessTags(atPath: path) ?? LoudnessTags()
            gain = entry.gain * tags.amplitude(for: entry.normalization)
        } else {
            gain = entry.gain
        }
        let fileRate = decoder.info.sampleRate
        firstFileFrame = min(decoder.info.frameCount, (entry.startTime ?? 0).frames(at: fileRate))
        // Without an end time, read to what the header declares, so a cut-off file is reported.
        endFileFrame = entry.endTime.map { min(decoder.info.frameCount, $0.frames(at: fileRate)) }
            ?? decoder.declaredFrameCount
        if fileRate != streamRate {
            do {
                converter = try SampleRateConverter(inputRate: fileRate, outputRate: streamRate,
                                                    channelCount: streamChannels)
            } catch {
                throw DecoderError(path: decoder.path, reason: .unsupportedFormat(error.description))
            }
        } else {
            converter = nil
        }
        convertedCapacityInFrames = converter?.maximumOutputFrames(forInputFrames: chunkFrames) ?? chunkFrames
        fileBuffer = .allocate(capacity: chunkFrames * decoder.info.channelCount)
        mappedBuffer = .allocate(capacity: chunkFrames * streamChannels)
        convertedBuffer = .allocate(capacity: convertedCapacityInFrames * streamChannels)
        if firstFileFrame > 0 { try decoder.seek(toFrame: firstFileFrame) }
    }

    deinit {
        fileBuffer.deallocate()
        mappedBuffer.deallocate()
        convertedBuffer.deallocate()
    }

    /// The most samples one `nextChunk` call can return (beyond the carry).
    var maximumChunkSamples: Int { convertedCapacityInFrames * streamChannels }

    /// Decodes the next chunk. The samples stay valid until the next call; empty when the
    /// entry is finished. Throws when the file breaks or ends before its declared length.
    public func nextChunk() throws(DecoderError) -> UnsafeBufferPointer<Float> {
        if let deferredError {
            self.deferredError = nil
            throw deferredError
        }
        if isFinished { return UnsafeBufferPointer(start: nil, count: 0) }
        var producedFrames = 0
        var output = UnsafeMutablePointer<Float>(mappedBuffer)
        if !inputDone {
            let wanted = min(chunkFrames, endFileFrame - decoder.position)
            let decoded = wanted > 0 ? try decoder.read(into: fileBuffer, frameCount: wanted) : 0
            if decoded == 0 {
                inputDone = true
            } else {
                mapChannels(frameCount: decoded)
                producedFrames = decoded
            }
        }
        if let converter {
            do {
                let (_, produced) = try converter.process(
                    input: inputDone ? nil : mappedBuffer, inputFrames: producedFrames,
                    output: convertedBuffer, outputCapacityInFrames: convertedCapacityInFrames)
                producedFrames = produced
                output = convertedBuffer
            } catch {
                throw DecoderError(path: decoder.path, reason: .corrupt(error.description))
            }
            if inputDone && producedFrames == 0 { isFinished = true }
        } else if inputDone {
            isFinished = true
        }
        entryFrame += producedFrames
        if gain != 1 {
            for index in 0..<producedFrames * streamChannels { output[index] *= gain }
        }
        return UnsafeBufferPointer(start: output, count: producedFrames * streamChannels)
    }

    /// Moves to `frame` of the entry (stream rate), dropping the carry; a frame past the
    /// entry's end moves to its end (the entry then finishes).
    public func seek(toEntryFrame frame: Int) throws(DecoderError) {
        let fileRate = decoder.info.sampleRate
        let fileFrame = firstFileFrame + (Double(max(0, frame)) * Double(fileRate) / Double(streamRate)).clampedInt()
        let target = min(fileFrame, endFileFrame)
        try decoder.seek(toFrame: target)
        let frame = fileFrame > target ? (Double(target - firstFileFrame) * Double(streamRate) / Double(fileRate)).clampedInt() : max(0, frame)
        carry.removeAll()
        deferredError = nil
        inputDone = false
        isFinished = false
        entryFrame = frame
        converter?.reset()
    }

    /// File channels to stream channels: equal counts copy, mono is duplicated, a mono
    /// stream gets the average, otherwise the first channels are kept.
    private func mapChannels(frameCount: Int) {
        let fileChannels = decoder.info.channelCount
        if fileChannels == streamChannels {
            mappedBuffer.update(from: fileBuffer, count: frameCount * fileChannels)
            return
        }
        for frame in 0..<frameCount {
            let source = fileBuffer + frame * fileChannels
            let destination = mappedBuffer + frame * streamChannels
            if fileChannels == 1 {
                for channel in 0..<streamChannels { destination[channel] = source[0] }
            } else if streamChannels == 1 {
                var sum: Float = 0
                for channel in 0..<fileChannels { sum += source[channel] }
                destination[0] = sum / Float(fileChannels)
            } else {
                for channel in 0..<streamChannels {
                    destination[channel] = channel < fileChannels ? source[channel] : 0
                }
            }
        }
    }
}
