import CSoxr

// The one wrapper around libsoxr (CSoxr).

/// A failed soxr call.
public struct SampleRateConverterError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let message: String
    public var description: String { "libsoxr \(operation) failed: \(message)" }
}

/// Streams interleaved float frames from one sample rate to another (libsoxr, high quality).
///
/// Thread safety: one thread at a time (the decoder thread). Real-time safety: none.
final class SampleRateConverter {
    let inputRate: Int
    let outputRate: Int
    let channelCount: Int
    private let soxr: soxr_t

    init(inputRate: Int, outputRate: Int, channelCount: Int) throws(SampleRateConverterError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channelCount = channelCount
        var error: soxr_error_t?
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var qualitySpec = soxr_quality_spec(UInt(SOXR_HQ), 0)
        let handle = soxr_create(Double(inputRate), Double(outputRate), UInt32(channelCount),
                                 &error, &ioSpec, &qualitySpec, nil)
        if let error {
            throw SampleRateConverterError(operation: "soxr_create", message: String(cString: error))
        }
        soxr = handle!
    }

    deinit { soxr_delete(soxr) }

    /// Forgets the filter's history (after a seek).
    func reset() { _ = soxr_clear(soxr) }

    /// Output frames that `inputFrames` input frames can produce, with headroom.
    func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        inputFrames * outputRate / inputRate + 64
    }

    /// Converts `inputFrames` frames; returns (input frames consumed, output frames produced).
    /// Pass `input: nil` at the end of the stream to flush what the filter still holds.
    func process(input: UnsafePointer<Float>?, inputFrames: Int,
                 output: UnsafeMutablePointer<Float>,
                 outputCapacityInFrames: Int) throws(SampleRateConverterError) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        let error = soxr_process(soxr, input, input == nil ? 0 : inputFrames, &consumed,
                                 output, outputCapacityInFrames, &produced)
        if let error {
            throw SampleRateConverterError(operation: "soxr_process", message: String(cString: error))
        }
        return (consumed, produced)
    }
}
