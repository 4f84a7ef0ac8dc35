/// Converts interleaved float samples in [-1, 1] to the device's sample format.
///
/// This is the render step's inner loop. Real-time safety: no allocation, no lock
/// (`@_noLocks`, checked by the compiler in optimized builds; `@_noLocks` implies no allocation).
/// 16-bit conversion is exact for samples that came from 16-bit sources (x / 32768 * 32768 == x),
/// which is what makes bit-exact gapless checks possible.
#if MUSICKIT_CHECKS_NO_LOCKS
@_noLocks
#endif
func convertSamples(_ source: UnsafePointer<Float>, count: Int,
                    to destination: UnsafeMutableRawPointer, format: PCMSampleFormat) {
    switch format {
    case .int16:
        let output = destination.assumingMemoryBound(to: Int16.self)
        for index in 0..<count {
            output[index] = Int16(clampedScaled(source[index], scale: 32_768, maximum: 32_767))
        }
    case .int32:
        let output = destination.assumingMemoryBound(to: Int32.self)
        for index in 0..<count {
            let scaled = roundedToNearestEven(Double(source[index]) * 2_147_483_648)
            let clamped = scaled.isNaN ? 0 : min(max(scaled, -2_147_483_648), 2_147_483_647)
            output[index] = Int32(clamped)
        }
    case .float32:
        let output = destination.assumingMemoryBound(to: Float.self)
        for index in 0..<count {
            let sample = source[index]
            output[index] = sample.isNaN ? 0 : min(max(sample, -1), 1)
        }
    }
}

@inline(__always)
#if MUSICKIT_CHECKS_NO_LOCKS
@_noLocks
#endif
private func clampedScaled(_ sample: Float, scale: Float, maximum: Float) -> Int32 {
    let scaled = roundedToNearestEven(sample * scale)
    if scaled.isNaN { return 0 }
    return Int32(min(max(scaled, -scale), maximum))
}

/// Round to nearest, ties to even, for |x| < 2^22, by the add-and-subtract trick
/// (`rounded()` pulls in a generic enum the real-time checker rejects).
@inline(__always)
#if MUSICKIT_CHECKS_NO_LOCKS
@_noLocks
#endif
private func roundedToNearestEven(_ value: Float) -> Float {
    let magic: Float = 12_582_912  // 1.5 * 2^23
    return value >= 0 ? (value + magic) - magic : (value - magic) + magic
}

/// The same for Double, exact for |x| < 2^51.
@inline(__always)
#if MUSICKIT_CHECKS_NO_LOCKS
@_noLocks
#endif
private func roundedToNearestEven(_ value: Double) -> Double {
    let magic: Double = 6_755_399_441_055_744  // 1.5 * 2^52
    return value >= 0 ? (value + magic) - magic : (value - magic) + magic
}

/// Copies `count` samples in `format` from `source` to `destination`, scaled by `gain` (0...1):
/// the engine's own volume on outputs without one at the server. Rounded to nearest, so a gain
/// of 1 would copy exactly (the caller copies without scaling then, for bit-exact output).
#if MUSICKIT_CHECKS_NO_LOCKS
@_noLocks
#endif
func copySamples(_ source: UnsafeRawPointer, count: Int, to destination: UnsafeMutableRawPointer,
                 format: PCMSampleFormat, gain: Float) {
    switch format {
    case .int16:
        let input = source.assumingMemoryBound(to: Int16.self)
        let output = destination.assumingMemoryBound(to: Int16.self)
        for index in 0..<count {
            output[index] = Int16(roundedToNearestEven(Float(input[index]) * gain))
        }
    case .int32:
        let input = source.assumingMemoryBound(to: Int32.self)
        let output = destination.assumingMemoryBound(to: Int32.self)
        let scale = Double(gain)
        for index in 0..<count {
            output[index] = Int32(roundedToNearestEven(Double(input[index]) * scale))
        }
    case .float32:
        let input = source.assumingMemoryBound(to: Float.self)
        let output = destination.assumingMemoryBound(to: Float.self)
        for index in 0..<count { output[index] = input[index] * gain }
    }
}

/// The amplitude factor for a volume of 0...1 (`AudioEngine.clampedVolume`) on the scale
/// PulseAudio and PipeWire show (cubic: 50 % is −18 dB), so the engine's own volume sounds like
/// the server's at the same setting.
func amplitude(forVolume volume: Double) -> Float {
    Float(volume * volume * volume)
}
