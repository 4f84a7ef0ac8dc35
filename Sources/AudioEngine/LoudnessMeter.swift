import PlatformSupport
import CEbur128

// libebur128's wrapper: EBU R128 / ReplayGain 2.0 loudness of whole files, for songs whose
// files carry no ReplayGain tags.

/// A file's loudness as EBU R128 measures it: integrated loudness (gated, in LUFS) and its true
/// peak (4× oversampled, 1 at full scale), and the ReplayGain 2.0 gain that brings it to −18 LUFS.
public struct LoudnessMeasurement: Sendable, Hashable {
    public var integratedLUFS: Double
    public var truePeak: Double
    /// The loudness and true peak of the file's album as one programme, when the album was
    /// measured (`LoudnessMeter.measureAlbum`): what album gain plays it at.
    public var albumIntegratedLUFS: Double?
    public var albumTruePeak: Double?

    public init(integratedLUFS: Double, truePeak: Double, albumIntegratedLUFS: Double? = nil, albumTruePeak: Double? = nil) {
        self.integratedLUFS = integratedLUFS
        self.truePeak = truePeak
        self.albumIntegratedLUFS = albumIntegratedLUFS
        self.albumTruePeak = albumTruePeak
    }

    /// The gain to ReplayGain 2.0's reference level, in dB.
    public var replayGainDB: Double { ReplayGain.referenceLUFS - integratedLUFS }
    /// The album's gain to the reference level, in dB, when the album was measured.
    public var albumReplayGainDB: Double? { albumIntegratedLUFS.map { ReplayGain.referenceLUFS - $0 } }

    /// These figures as the ReplayGain values a tagger would have written.
    public var replayGain: LoudnessTags {
        LoudnessTags(trackGainDB: replayGainDB, trackPeak: truePeak, albumGainDB: albumReplayGainDB, albumPeak: albumTruePeak)
    }
}

/// Measures files with libebur128 (opened when first needed, as the decoders are).
///
/// Thread safety: each call has its own meter state; any thread. Real-time safety: none (it
/// decodes the whole file).
public enum LoudnessMeter {
    /// Decodes the file at `path` to its end and measures it. Throws the decoder's error for a
    /// file that cannot be read, or `.unsupportedFormat` when libebur128 cannot be opened; a file
    /// of silence (no gated block: −∞ LUFS) measures as nil.
    public static func measure(path: String) throws(DecoderError) -> LoudnessMeasurement? {
        try State(measuring: path).measurement
    }

    /// Measures the files of one album: each file, and the album as one programme — EBU R128's
    /// gating over the blocks of all its files together (libebur128's
    /// `ebur128_loudness_global_multiple`), not an average of the files' figures — with the
    /// highest of their true peaks. Throws for the first file that cannot be read; the album is
    /// nil when all of it is silence.
    public static func measureAlbum(paths: [String]) throws(DecoderError) -> (tracks: [LoudnessMeasurement?], album: LoudnessMeasurement?) {
        var states: [State] = []
        for path in paths { states.append(try State(measuring: path)) }
        let tracks = states.map(\.measurement)
        guard let library = states.first?.library else { return (tracks, nil) }
        var handles: [OpaquePointer?] = states.map(\.handle)
        var loudness = 0.0
        guard library.loudnessGlobalMultiple(&handles, handles.count, &loudness) == 0, loudness.isFinite else { return (tracks, nil) }
        return (tracks, LoudnessMeasurement(integratedLUFS: loudness, truePeak: tracks.compactMap { $0?.truePeak }.max() ?? 0))
    }

    /// One file's meter, fed the whole file; kept until its album is measured too.
    private final class State {
        let library: LibEbur128
        var handle: OpaquePointer?
        private(set) var measurement: LoudnessMeasurement?

        init(measuring path: String) throws(DecoderError) {
            switch LibEbur128.loaded {
            case .success(let loaded): library = loaded
            case .failure(let failure): throw DecoderError(path: path, reason: .unsupportedFormat(failure.description))
            }
            let decoder = try AudioFileDecoder(path: path)
            let channels = decoder.info.channelCount
            let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue)
            guard let state = library.initialize(UInt32(channels), UInt(decoder.info.sampleRate), mode) else {
                throw DecoderError(path: path, reason: .unsupportedFormat("libebur128 refused \(channels) channels at \(decoder.info.sampleRate) Hz"))
            }
            handle = state
            let chunk = 16_384
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
            defer { buffer.deallocate() }
            while true {
                let frames = try decoder.read(into: buffer, frameCount: chunk)
                if frames == 0 { break }
                guard library.addFramesFloat(state, buffer, frames) == 0 else {
                    throw DecoderError(path: path, reason: .unsupportedFormat("libebur128 could not take the frames"))
                }
            }
            var loudness = 0.0
            guard library.loudnessGlobal(state, &loudness) == 0, loudness.isFinite else { return }
            var peak = 0.0
            for channel in 0..<channels {
                var channelPeak = 0.0
                if library.truePeak(state, UInt32(channel), &channelPeak) == 0 { peak = max(peak, channelPeak) }
            }
            measurement = LoudnessMeasurement(integratedLUFS: loudness, truePeak: peak)
        }

        deinit { library.destroy(&handle) }
    }
}

/// libebur128's functions, looked up once.
private struct LibEbur128: @unchecked Sendable {
    let initialize: @convention(c) (UInt32, UInt, Int32) -> OpaquePointer?
    let destroy: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?) -> Void
    let addFramesFloat: @convention(c) (OpaquePointer?, UnsafePointer<Float>?, Int) -> Int32
    let loudnessGlobal: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Double>?) -> Int32
    let loudnessGlobalMultiple: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, Int, UnsafeMutablePointer<Double>?) -> Int32
    let truePeak: @convention(c) (OpaquePointer?, UInt32, UnsafeMutablePointer<Double>?) -> Int32

    static let loaded: Result<LibEbur128, DynamicLibrary.Failure> = DynamicLibrary.table("libebur128.so.1") { function throws(DynamicLibrary.Failure) in
        LibEbur128(initialize: try function("ebur128_init"), destroy: try function("ebur128_destroy"),
                   addFramesFloat: try function("ebur128_add_frames_float"),
                   loudnessGlobal: try function("ebur128_loudness_global"),
                   loudnessGlobalMultiple: try function("ebur128_loudness_global_multiple"), truePeak: try function("ebur128_true_peak"))
    }
}
