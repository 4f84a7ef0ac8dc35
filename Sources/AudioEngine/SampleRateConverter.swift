import PlatformSupport
import CSoxr

// The one wrapper around libsoxr (CSoxr), through `LibSoxr`'s table: libsoxr.so.0 (and the
// OpenMP runtime it loads) is opened when the first resampler is made (see DynamicLibrary).

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
    private let library: LibSoxr
    private let soxr: soxr_t

    init(inputRate: Int, outputRate: Int, channelCount: Int) throws(SampleRateConverterError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channelCount = channelCount
        switch LibSoxr.loaded {
        case .success(let loaded): library = loaded
        case .failure(let failure): throw SampleRateConverterError(operation: "loading", message: failure.description)
        }
        var error: soxr_error_t?
        var ioSpec = library.ioSpec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var qualitySpec = library.qualitySpec(UInt(SOXR_HQ), 0)
        let handle = library.create(Double(inputRate), Double(outputRate), UInt32(channelCount),
                                    &error, &ioSpec, &qualitySpec, nil)
        if let error {
            throw SampleRateConverterError(operation: "soxr_create", message: String(cString: error))
        }
        soxr = handle!
    }

    deinit { library.delete(soxr) }

    /// Forgets the filter's history (after a seek).
    func reset() { _ = library.clear(soxr) }

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
        let error = library.process(soxr, input, input == nil ? 0 : inputFrames, &consumed,
                                 output, outputCapacityInFrames, &produced)
        if let error {
            throw SampleRateConverterError(operation: "soxr_process", message: String(cString: error))
        }
        return (consumed, produced)
    }
}

/// The libsoxr functions this file calls, from libsoxr.so.0 opened at first use.
private struct LibSoxr: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    let create: @convention(c) (Double, Double, UInt32, UnsafeMutablePointer<soxr_error_t?>?,
                                UnsafePointer<soxr_io_spec_t>?, UnsafePointer<soxr_quality_spec_t>?,
                                UnsafePointer<soxr_runtime_spec_t>?) -> soxr_t?
    let process: @convention(c) (soxr_t?, UnsafeRawPointer?, Int, UnsafeMutablePointer<Int>?,
                                 UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int>?) -> soxr_error_t?
    let clear: @convention(c) (soxr_t?) -> soxr_error_t?
    let delete: @convention(c) (soxr_t?) -> Void
    let ioSpec: @convention(c) (soxr_datatype_t, soxr_datatype_t) -> soxr_io_spec_t
    let qualitySpec: @convention(c) (UInt, UInt) -> soxr_quality_spec_t

    static let loaded: Result<LibSoxr, DynamicLibrary.Failure> =
        DynamicLibrary.table("libsoxr.so.0") { function throws(DynamicLibrary.Failure) in
            LibSoxr(
                create: try function("soxr_create"), process: try function("soxr_process"),
                clear: try function("soxr_clear"), delete: try function("soxr_delete"),
                ioSpec: try function("soxr_io_spec"), qualitySpec: try function("soxr_quality_spec"))
        }
}
