import Foundation
@testable import MusicKitCore
import XCTest

/// Points MusicKit at a fresh temporary root (config, data, runtime) with the bundled assets,
/// and removes it after the test.
@discardableResult
func useTemporaryEnvironment(_ testCase: XCTestCase, assets: URL? = MusicKitEnvironment.bundledAssets(),
                             applicationIdentifier: String = "musickit-tests") throws -> MusicKitEnvironment {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-env-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    let environment = MusicKitEnvironment(root: root, assetsDirectory: assets, applicationIdentifier: applicationIdentifier)
    MusicKitEnvironment.current = environment
    testCase.addTeardownBlock {
        MusicKitEnvironment.current = .fromProcessEnvironment()
        try? FileManager.default.removeItem(at: root)
    }
    return environment
}

/// Changes the account of the current environment.
func setAccount(_ change: (inout MusicAccountSettings) -> Void) throws {
    try AccountStore.update { change(&$0) }
}

/// The bundled catalog's IDs used in tests (Assets/Tools/make_catalog.py).
enum BundledCatalog {
    static let ezerEv: MusicItemID = "1762000001"             // Obsidian Shell, Elysia #1
    static let wingsOfCruelty: MusicItemID = "1762000008"     // explicit
    static let wingsOfCrueltyClean: MusicItemID = "1762000024"
    static let mediaThreat: MusicItemID = "1762000012"        // not in the gb catalog
    static let escapeFromChaoslandUS: MusicItemID = "1762000017"
    static let escapeFromChaoslandGB: MusicItemID = "1772000017"
    static let elysia: MusicItemID = "1761000001"
    static let advancedResearch: MusicItemID = "1761000004"
    static let gaplessAlbum: MusicItemID = "1761000006"
    static let obsidianShell: MusicItemID = "1760000001"
    static let maxstack: MusicItemID = "1760000002"
}
