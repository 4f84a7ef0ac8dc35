import PlatformSupport
import AudioEngine
import CPNG
import Foundation

// The wrapper of libpng (the only file that imports CPNG): artwork read into RGBA pixels and
// written back, through libpng's simplified API. libpng16.so.16 is opened when the first image
// is (see DynamicLibrary).

/// An image as 8-bit RGBA pixels, row by row (Linux addition: what artwork is scaled and drawn
/// from; not in Apple's API, so package-visible only).
package struct RGBAImage: Sendable, Equatable {
    package let width: Int
    package let height: Int
    /// `width * height * 4` bytes: red, green, blue, alpha.
    package let pixels: [UInt8]

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4, "RGBA pixels for \(width)×\(height)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Reads a PNG file (any colour type; converted to RGBA).
    package init(pngFile path: String) throws(Failure) {
        let png = try LibPNG.shared()
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png.beginRead(&image, path) != 0 else {
            throw Failure(description: "\(path): \(Self.message(of: image))")
        }
        image.format = musickit_png_format_rgba
        let width = Int(image.width)
        let height = Int(image.height)
        guard width > 0, height > 0, width <= 16_384, height <= 16_384 else {
            png.free(&image)
            throw Failure(description: "\(path): an image of \(width)×\(height) pixels is not artwork")
        }
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let finished = pixels.withUnsafeMutableBytes { png.finishRead(&image, nil, $0.baseAddress, 0, nil) }
        guard finished != 0 else {
            throw Failure(description: "\(path): \(Self.message(of: image))")
        }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// The image as a PNG file's bytes, made in memory so that the caller writes them with the
    /// permissions it chooses (libpng's own file writer creates files as the umask says: 0644).
    package func pngData() throws(Failure) -> Data {
        let png = try LibPNG.shared()
        func newImage() -> png_image {
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            image.width = UInt32(width)
            image.height = UInt32(height)
            image.format = musickit_png_format_rgba
            return image
        }
        var image = newImage()
        var size = 0
        // First the size it needs, then the bytes.
        guard pixels.withUnsafeBytes({ png.writeToMemory(&image, nil, &size, 0, $0.baseAddress, 0, nil) }) != 0, size > 0 else {
            throw Failure(description: "PNG: \(Self.message(of: image))")
        }
        var data = Data(count: size)
        image = newImage()
        let written = data.withUnsafeMutableBytes { output in
            pixels.withUnsafeBytes { png.writeToMemory(&image, output.baseAddress, &size, 0, $0.baseAddress, 0, nil) }
        }
        guard written != 0 else { throw Failure(description: "PNG: \(Self.message(of: image))") }
        return data.prefix(size)
    }

    /// The image scaled to `width`×`height`: each new pixel is the average of the pixels it covers
    /// (area sampling, for shrinking artwork), or the nearest one when enlarging.
    package func scaled(width newWidth: Int, height newHeight: Int) -> RGBAImage {
        guard newWidth != width || newHeight != height else { return self }
        var output = [UInt8](repeating: 0, count: newWidth * newHeight * 4)
        for y in 0..<newHeight {
            let top = y * height / newHeight
            let bottom = max(top + 1, (y + 1) * height / newHeight)
            for x in 0..<newWidth {
                let left = x * width / newWidth
                let right = max(left + 1, (x + 1) * width / newWidth)
                var sums = (0, 0, 0, 0)
                for row in top..<bottom {
                    var index = (row * width + left) * 4
                    for _ in left..<right {
                        sums.0 += Int(pixels[index])
                        sums.1 += Int(pixels[index + 1])
                        sums.2 += Int(pixels[index + 2])
                        sums.3 += Int(pixels[index + 3])
                        index += 4
                    }
                }
                let count = (bottom - top) * (right - left)
                let target = (y * newWidth + x) * 4
                output[target] = UInt8((sums.0 + count / 2) / count)
                output[target + 1] = UInt8((sums.1 + count / 2) / count)
                output[target + 2] = UInt8((sums.2 + count / 2) / count)
                output[target + 3] = UInt8((sums.3 + count / 2) / count)
            }
        }
        return RGBAImage(width: newWidth, height: newHeight, pixels: output)
    }

    /// The average colour (red, green, blue) of the opaque parts.
    package var averageColour: (red: Double, green: Double, blue: Double) {
        var sums = (0.0, 0.0, 0.0)
        var weight = 0.0
        for index in stride(from: 0, to: pixels.count, by: 4) {
            let alpha = Double(pixels[index + 3]) / 255
            sums.0 += Double(pixels[index]) * alpha
            sums.1 += Double(pixels[index + 1]) * alpha
            sums.2 += Double(pixels[index + 2]) * alpha
            weight += alpha
        }
        guard weight > 0 else { return (0, 0, 0) }
        return (sums.0 / weight, sums.1 / weight, sums.2 / weight)
    }

    private static func message(of image: png_image) -> String {
        var copy = image.message
        let text = withUnsafeBytes(of: &copy) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return text.isEmpty ? "not a PNG image libpng can read" : text
    }
}

/// The libpng functions this file calls, from libpng16.so.16 opened at first use.
private struct LibPNG: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    let beginRead: @convention(c) (UnsafeMutablePointer<png_image>?, UnsafePointer<CChar>?) -> Int32
    let finishRead: @convention(c) (UnsafeMutablePointer<png_image>?, UnsafeRawPointer?, UnsafeMutableRawPointer?, Int32,
                                    UnsafeMutableRawPointer?) -> Int32
    let writeToMemory: @convention(c) (UnsafeMutablePointer<png_image>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, Int32,
                                       UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32
    let free: @convention(c) (UnsafeMutablePointer<png_image>?) -> Void

    private static let loaded: Result<LibPNG, RGBAImage.Failure> =
        DynamicLibrary.table("libpng16.so.16") { function throws(DynamicLibrary.Failure) in
            LibPNG(beginRead: try function("png_image_begin_read_from_file"), finishRead: try function("png_image_finish_read"),
                   writeToMemory: try function("png_image_write_to_memory"), free: try function("png_image_free"))
        }.mapError { RGBAImage.Failure(description: $0.description) }

    static func shared() throws(RGBAImage.Failure) -> LibPNG { try loaded.get() }
}
