import Foundation

/// A colour, as Core Graphics has it on Apple platforms (where `Artwork`'s colours are
/// `CGColor`s). Here: RGBA components in 0...1.
/// (Linux addition)
public final class CGColor: Hashable, Sendable, CustomStringConvertible {
    public let components: [CGFloat]?
    public var numberOfComponents: Int { components?.count ?? 0 }
    public var alpha: CGFloat { components?.last ?? 1 }

    public init(red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat) {
        components = [red, green, blue, alpha]
    }

    /// From "08080a" (as Apple Music API documents give colours).
    convenience init?(hex: String) {
        guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
        self.init(red: CGFloat((value >> 16) & 0xFF) / 255, green: CGFloat((value >> 8) & 0xFF) / 255,
                  blue: CGFloat(value & 0xFF) / 255, alpha: 1)
    }

    /// "08080a" again.
    var hexString: String {
        let rgb = (components ?? [0, 0, 0]).prefix(3).map { Int(($0 * 255).rounded()) }
        return rgb.map { String(format: "%02x", $0) }.joined()
    }

    public static func == (left: CGColor, right: CGColor) -> Bool { left.components == right.components }
    public func hash(into hasher: inout Hasher) { hasher.combine(components) }
    public var description: String { "CGColor(#\(hexString))" }
}

/// An image for a music item: a URL template with `{w}` and `{h}`, its largest size and its colours.
public struct Artwork: Equatable, Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    public let alternateText: String?
    public let backgroundColor: CGColor?
    public let maximumHeight: Int
    public let maximumWidth: Int
    public let primaryTextColor: CGColor?
    public let quaternaryTextColor: CGColor?
    public let secondaryTextColor: CGColor?
    public let tertiaryTextColor: CGColor?
    /// The `{w}x{h}` URL template, as the document gave it.
    let urlTemplate: String

    init?(json: JSONValue) {
        guard let object = json.object, let template = object["url"]?.string else { return nil }
        urlTemplate = template
        maximumWidth = object["width"]?.int ?? 0
        maximumHeight = object["height"]?.int ?? 0
        alternateText = object["alternateText"]?.string
        backgroundColor = object["bgColor"]?.string.flatMap(CGColor.init(hex:))
        primaryTextColor = object["textColor1"]?.string.flatMap(CGColor.init(hex:))
        secondaryTextColor = object["textColor2"]?.string.flatMap(CGColor.init(hex:))
        tertiaryTextColor = object["textColor3"]?.string.flatMap(CGColor.init(hex:))
        quaternaryTextColor = object["textColor4"]?.string.flatMap(CGColor.init(hex:))
    }

    /// The image's URL at `width` x `height` pixels. For artwork on this machine (the bundled
    /// catalog's PNG files, library files' covers in PNG or JPEG) it is a file URL of the image
    /// at that size, scaled once and kept in the data folder's `artwork` cache; for the Apple
    /// Music API's artwork, the address to load.
    public func url(width: Int, height: Int) -> URL? {
        let text = urlTemplate.replacingOccurrences(of: "{w}", with: String(width))
            .replacingOccurrences(of: "{h}", with: String(height))
            .replacingOccurrences(of: "{c}", with: "bb")
            .replacingOccurrences(of: "{f}", with: "jpg")
        guard let url = URL(string: text) else { return nil }
        guard url.isFileURL, ["png", "jpg", "jpeg"].contains(url.pathExtension.lowercased()), width > 0, height > 0 else { return url }
        return (try? ArtworkCache.file(for: url.path, width: width, height: height)) ?? url
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["url": .string(urlTemplate), "width": .number(Double(maximumWidth)),
                                           "height": .number(Double(maximumHeight))]
        object["alternateText"] = alternateText.map(JSONValue.string)
        object["bgColor"] = backgroundColor.map { .string($0.hexString) }
        object["textColor1"] = primaryTextColor.map { .string($0.hexString) }
        object["textColor2"] = secondaryTextColor.map { .string($0.hexString) }
        object["textColor3"] = tertiaryTextColor.map { .string($0.hexString) }
        object["textColor4"] = quaternaryTextColor.map { .string($0.hexString) }
        return .object(object)
    }

    public init(from decoder: any Decoder) throws {
        let json = try JSONValue(from: decoder)
        guard let artwork = Artwork(json: json) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "artwork without a url"))
        }
        self = artwork
    }

    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    public var description: String { "Artwork(maximumWidth: \(maximumWidth), maximumHeight: \(maximumHeight))" }
    public var debugDescription: String { "Artwork(urlFormat: \"\(urlTemplate)\", maximumWidth: \(maximumWidth), maximumHeight: \(maximumHeight))" }
}

/// A short preview of a music item's audio.
public struct PreviewAsset: Equatable, Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    public let artwork: Artwork?
    public let hlsURL: URL?
    public let url: URL?

    init?(json: JSONValue) {
        guard let object = json.object else { return nil }
        url = object["url"]?.string.flatMap { URL(string: $0) }
        hlsURL = object["hlsUrl"]?.string.flatMap { URL(string: $0) }
        artwork = object["artwork"].flatMap(Artwork.init(json:))
    }

    public init(from decoder: any Decoder) throws {
        guard let asset = PreviewAsset(json: try JSONValue(from: decoder)) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a preview"))
        }
        self = asset
    }

    public func encode(to encoder: any Encoder) throws {
        var object: [String: JSONValue] = [:]
        object["url"] = url.map { .string($0.absoluteString) }
        object["hlsUrl"] = hlsURL.map { .string($0.absoluteString) }
        object["artwork"] = artwork?.json
        try JSONValue.object(object).encode(to: encoder)
    }

    public var description: String { "PreviewAsset(url: \(url?.absoluteString ?? "nil"))" }
    public var debugDescription: String {
        "PreviewAsset(url: \(url?.absoluteString ?? "nil"), hlsURL: \(hlsURL?.absoluteString ?? "nil"), artwork: \(artwork.map { "\($0)" } ?? "nil"))"
    }
}

/// An opaque value a music player uses to play an item.
public struct PlayParameters: Equatable, Hashable, Sendable, Codable {
    let json: [String: JSONValue]

    init?(json: JSONValue) {
        guard let object = json.object else { return nil }
        self.json = object
    }

    init(id: String, kind: String) {
        json = ["id": .string(id), "kind": .string(kind)]
    }

    var id: String? { json["id"]?.string }
    var kind: String? { json["kind"]?.string }
    var isLibrary: Bool { json["isLibrary"]?.bool ?? false }
    var catalogID: String? { json["catalogId"]?.string }

    public init(from decoder: any Decoder) throws {
        guard let value = PlayParameters(json: try JSONValue(from: decoder)) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "playParams is not an object"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws { try JSONValue.object(json).encode(to: encoder) }
}

/// Notes written about an item by the catalog's editors.
public struct EditorialNotes: Equatable, Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    public let name: String?
    public let short: String?
    public let standard: String?
    public let tagline: String?

    init?(json: JSONValue) {
        guard let object = json.object else { return nil }
        name = object["name"]?.string
        short = object["short"]?.string
        standard = object["standard"]?.string
        tagline = object["tagline"]?.string
    }

    public var description: String { short ?? standard ?? name ?? tagline ?? "" }
    public var debugDescription: String { "EditorialNotes(short: \(short.debugDescription), standard: \(standard.debugDescription))" }
}

/// Whether an item has explicit content.
public enum ContentRating: String, Equatable, Hashable, Sendable, Codable {
    case clean
    case explicit
}

/// How an item's audio is encoded.
public enum AudioVariant: Equatable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case dolbyAtmos
    case dolbyAudio
    case highResolutionLossless
    case lossless
    case lossyStereo
    case spatialAudio

    init?(apiValue: String) {
        switch apiValue {
        case "dolby-atmos": self = .dolbyAtmos
        case "dolby-audio": self = .dolbyAudio
        case "hi-res-lossless": self = .highResolutionLossless
        case "lossless": self = .lossless
        case "lossy-stereo": self = .lossyStereo
        case "spatial": self = .spatialAudio
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .dolbyAtmos: "Dolby Atmos"
        case .dolbyAudio: "Dolby Audio"
        case .highResolutionLossless: "Hi-Res Lossless"
        case .lossless: "Lossless"
        case .lossyStereo: "Lossy Stereo"
        case .spatialAudio: "Spatial Audio"
        }
    }
}
