import PlatformSupport
import Foundation
import MusicKitCore

// The wrapper of libchafa (Debian: libchafa0): images drawn as terminal text, or as pixels for
// terminals that show them (kitty's protocol, iTerm2's, sixels). libchafa.so.0 (and
// GLib, which it loads) is opened when the first image is drawn (see DynamicLibrary). Its header
// needs GLib's include folders, so the few declarations used here are written out below from
// chafa.h (Chafa 1.12).

/// An image drawn for a terminal as lines of text: Unicode block and border symbols coloured
/// with escape sequences, sized in character cells (Linux addition, package-visible: the CLI's
/// now-playing screen draws artwork with it).
package enum TerminalImage {
    /// The colours the terminal can show.
    package enum Colours: Sendable, Equatable {
        /// 24-bit colour (COLORTERM=truecolor or 24bit).
        case truecolor
        /// The 256-colour palette (TERM ending in 256color).
        case indexed256
        /// The 16 standard colours.
        case indexed16
        /// No colour (NO_COLOR): shapes in the foreground and background colours only.
        case none

        /// What the environment says the terminal shows.
        package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Colours {
            if !(environment["NO_COLOR"] ?? "").isEmpty { return .none }
            let colourTerm = (environment["COLORTERM"] ?? "").lowercased()
            if colourTerm == "truecolor" || colourTerm == "24bit" { return .truecolor }
            if (environment["TERM"] ?? "").hasSuffix("256color") { return .indexed256 }
            return .indexed16
        }
    }

    /// The ways a terminal shows pictures pixel by pixel.
    package enum PixelProtocol: String, Sendable, Equatable {
        /// kitty's graphics protocol (kitty, Ghostty, WezTerm).
        case kitty
        /// iTerm2's inline images (iTerm2, WezTerm).
        case iterm
        /// DEC sixels (foot, mlterm, xterm -ti vt340, contour...).
        case sixel

        /// The protocol the terminal speaks, from the environment; nil for block symbols.
        /// `MUSICKIT_TERMINAL_GRAPHICS` (kitty, iterm, sixel or symbols) overrides what `TERM`,
        /// `TERM_PROGRAM` and `KITTY_WINDOW_ID` say.
        package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> PixelProtocol? {
            if let chosen = environment["MUSICKIT_TERMINAL_GRAPHICS"]?.lowercased(), !chosen.isEmpty {
                return PixelProtocol(rawValue: chosen)
            }
            let term = environment["TERM"] ?? ""
            if term == "xterm-kitty" || term == "xterm-ghostty" || environment["KITTY_WINDOW_ID"] != nil { return .kitty }
            if ["iTerm.app", "WezTerm"].contains(environment["TERM_PROGRAM"] ?? "") { return .iterm }
            if term.hasPrefix("foot") || term.hasPrefix("mlterm") || term.hasPrefix("contour") || term.hasPrefix("yaft") { return .sixel }
            return nil
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// `image` as pixels filling `columns`×`rows` cells of `cellWidth`×`cellHeight` pixels: the
    /// escape sequences to write with the cursor at the box's top-left cell.
    package static func pixels(for image: RGBAImage, columns: Int, rows: Int, cellWidth: Int, cellHeight: Int,
                               using pixelProtocol: PixelProtocol) throws(Failure) -> String {
        guard columns > 0, rows > 0 else { return "" }
        let chafa = try LibChafa.shared()
        let config = chafa.newCanvasConfig()
        defer { chafa.unrefCanvasConfig(config) }
        chafa.setGeometry(config, Int32(columns), Int32(rows))
        chafa.setCellGeometry(config, Int32(max(cellWidth, 1)), Int32(max(cellHeight, 1)))
        chafa.setCanvasMode(config, LibChafa.canvasModeTruecolor)
        let mode = switch pixelProtocol {
        case .kitty: LibChafa.pixelModeKitty
        case .iterm: LibChafa.pixelModeITerm2
        case .sixel: LibChafa.pixelModeSixels
        }
        chafa.setPixelMode(config, mode)
        // The fallback terminal description has every protocol's sequences.
        let termInfo = chafa.fallbackTermInfo(chafa.defaultTermDb())
        defer { chafa.unrefTermInfo(termInfo) }
        return try render(image, chafa, config, termInfo: termInfo)
    }

    /// `image` drawn on a canvas made with `config` and printed for `termInfo` (nil: chafa's
    /// default sequences).
    private static func render(_ image: RGBAImage, _ chafa: LibChafa, _ config: OpaquePointer?,
                               termInfo: OpaquePointer?) throws(Failure) -> String {
        guard let canvas = chafa.newCanvas(config) else { throw Failure(description: "chafa_canvas_new failed") }
        defer { chafa.unrefCanvas(canvas) }
        image.pixels.withUnsafeBufferPointer { pixels in
            chafa.drawAllPixels(canvas, LibChafa.pixelRGBA8Unassociated, pixels.baseAddress, Int32(image.width),
                                Int32(image.height), Int32(image.width * 4))
        }
        guard let printed = chafa.print(canvas, termInfo) else { throw Failure(description: "chafa_canvas_print failed") }
        let text = printed.withMemoryRebound(to: UnsafeMutablePointer<CChar>?.self, capacity: 1) { $0.pointee }
            .map { String(cString: $0) } ?? ""
        _ = chafa.freeString(printed, 1)
        return text
    }

    /// `image` drawn in `columns`×`rows` cells: `rows` lines, each ending with its colours reset.
    package static func lines(for image: RGBAImage, columns: Int, rows: Int, colours: Colours) throws(Failure) -> [String] {
        guard columns > 0, rows > 0 else { return [] }
        let chafa = try LibChafa.shared()
        let symbols = chafa.newSymbolMap()
        defer { chafa.unrefSymbolMap(symbols) }
        chafa.addSymbolsByTags(symbols, LibChafa.blockBorderAndSpaceTags)
        let config = chafa.newCanvasConfig()
        defer { chafa.unrefCanvasConfig(config) }
        chafa.setGeometry(config, Int32(columns), Int32(rows))
        let mode = switch colours {
        case .truecolor: LibChafa.canvasModeTruecolor
        case .indexed256: LibChafa.canvasModeIndexed256
        case .indexed16: LibChafa.canvasModeIndexed16
        case .none: LibChafa.canvasModeForegroundBackground
        }
        chafa.setCanvasMode(config, mode)
        chafa.setPixelMode(config, LibChafa.pixelModeSymbols)
        chafa.setSymbolMap(config, symbols)
        let text = try render(image, chafa, config, termInfo: nil)
        return text.split(separator: "\n", omittingEmptySubsequences: false).prefix(rows)
            .map { $0.replacingOccurrences(of: "\r", with: "") + "\u{1B}[0m" }
    }
}

/// The libchafa (and GLib) functions TerminalImage calls, from libchafa.so.0 opened at first use.
private struct LibChafa: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    typealias Object = OpaquePointer
    let newSymbolMap: @convention(c) () -> Object?
    let addSymbolsByTags: @convention(c) (Object?, Int32) -> Void
    let unrefSymbolMap: @convention(c) (Object?) -> Void
    let newCanvasConfig: @convention(c) () -> Object?
    let setGeometry: @convention(c) (Object?, Int32, Int32) -> Void
    let setCellGeometry: @convention(c) (Object?, Int32, Int32) -> Void
    let setCanvasMode: @convention(c) (Object?, Int32) -> Void
    let setPixelMode: @convention(c) (Object?, Int32) -> Void
    let setSymbolMap: @convention(c) (Object?, Object?) -> Void
    let unrefCanvasConfig: @convention(c) (Object?) -> Void
    let newCanvas: @convention(c) (Object?) -> Object?
    let drawAllPixels: @convention(c) (Object?, Int32, UnsafePointer<UInt8>?, Int32, Int32, Int32) -> Void
    /// Returns a GString: `{ gchar *str; gsize len; gsize allocated_len; }`.
    let print: @convention(c) (Object?, Object?) -> UnsafeMutableRawPointer?
    let unrefCanvas: @convention(c) (Object?) -> Void
    let freeString: @convention(c) (UnsafeMutableRawPointer?, Int32) -> UnsafeMutablePointer<CChar>?
    let defaultTermDb: @convention(c) () -> Object?
    let fallbackTermInfo: @convention(c) (Object?) -> Object?
    let unrefTermInfo: @convention(c) (Object?) -> Void

    // From chafa.h's enums (Chafa 1.12).
    static let canvasModeTruecolor: Int32 = 0       // CHAFA_CANVAS_MODE_TRUECOLOR
    static let canvasModeIndexed256: Int32 = 1      // CHAFA_CANVAS_MODE_INDEXED_256
    static let canvasModeIndexed16: Int32 = 3       // CHAFA_CANVAS_MODE_INDEXED_16
    static let canvasModeForegroundBackground: Int32 = 5  // CHAFA_CANVAS_MODE_FGBG
    static let pixelModeSymbols: Int32 = 0          // CHAFA_PIXEL_MODE_SYMBOLS
    static let pixelModeSixels: Int32 = 1           // CHAFA_PIXEL_MODE_SIXELS
    static let pixelModeKitty: Int32 = 2            // CHAFA_PIXEL_MODE_KITTY
    static let pixelModeITerm2: Int32 = 3           // CHAFA_PIXEL_MODE_ITERM2
    static let pixelRGBA8Unassociated: Int32 = 4    // CHAFA_PIXEL_RGBA8_UNASSOCIATED
    /// CHAFA_SYMBOL_TAG_SPACE | BLOCK | BORDER | HALF: shapes every terminal font has.
    static let blockBorderAndSpaceTags: Int32 = (1 << 0) | (1 << 3) | (1 << 4) | (1 << 8) | (1 << 9)

    private static let loaded: Result<LibChafa, TerminalImage.Failure> =
        DynamicLibrary.table("libchafa.so.0") { function throws(DynamicLibrary.Failure) in
            LibChafa(
                newSymbolMap: try function("chafa_symbol_map_new"), addSymbolsByTags: try function("chafa_symbol_map_add_by_tags"),
                unrefSymbolMap: try function("chafa_symbol_map_unref"), newCanvasConfig: try function("chafa_canvas_config_new"),
                setGeometry: try function("chafa_canvas_config_set_geometry"),
                setCellGeometry: try function("chafa_canvas_config_set_cell_geometry"),
                setCanvasMode: try function("chafa_canvas_config_set_canvas_mode"),
                setPixelMode: try function("chafa_canvas_config_set_pixel_mode"),
                setSymbolMap: try function("chafa_canvas_config_set_symbol_map"),
                unrefCanvasConfig: try function("chafa_canvas_config_unref"), newCanvas: try function("chafa_canvas_new"),
                drawAllPixels: try function("chafa_canvas_draw_all_pixels"), print: try function("chafa_canvas_print"),
                unrefCanvas: try function("chafa_canvas_unref"),
                freeString: try function("g_string_free"),  // GLib's, found through libchafa
                defaultTermDb: try function("chafa_term_db_get_default"),
                fallbackTermInfo: try function("chafa_term_db_get_fallback_info"),
                unrefTermInfo: try function("chafa_term_info_unref"))
        }.mapError { TerminalImage.Failure(description: $0.description) }

    static func shared() throws(TerminalImage.Failure) -> LibChafa { try loaded.get() }
}
