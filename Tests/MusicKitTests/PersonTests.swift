import AudioEngine
import Foundation
@testable import MusicKitCore
@testable import MusicKitTerminal
import XCTest

/// The talk's subscription code (WWDC 2026 session 254, 4:47 and 5:59), without SwiftUI: it
/// must compile unchanged and behave as described.
@MainActor
final class SubscriptionModel {
    var subscription: MusicSubscription?
    var showSubscriptionOffer = false
    let options = MusicSubscriptionOffer.Options(
        messageIdentifier: .playMusic
    )

    var showsSubscriptionButton: Bool {
        if let subscription, subscription.canBecomeSubscriber { return true }
        return false
    }

    /// The body of the talk's `.task(id: isAuthorized)`.
    func task(until done: @escaping @MainActor (MusicSubscription) -> Bool) async {
        self.subscription = try? await MusicSubscription.current
        for await subscription in MusicSubscription.subscriptionUpdates {
            self.subscription = subscription
            if done(subscription) { break }
        }
    }
}

/// Authorization, the account and subscription, the offer.
final class AccountAndSubscriptionTests: XCTestCase {
    private var environment: MusicKitEnvironment!

    override func setUpWithError() throws {
        environment = try useTemporaryEnvironment(self, applicationIdentifier: "workout-app")
    }

    func testAuthorizationIsNotDeterminedUntilSomeoneDecidesAndIsRememberedPerApp() async throws {
        XCTAssertEqual(MusicAuthorization.currentStatus, .notDetermined)
        // No terminal in the test runner: nobody is asked.
        if open("/dev/tty", O_RDWR) < 0 {
            let asked = await MusicAuthorization.request()
            XCTAssertEqual(asked, .notDetermined)
        }
        try MusicAuthorizationSettings.set(.authorized, for: "workout-app")
        XCTAssertEqual(MusicAuthorization.currentStatus, .authorized)
        let again = await MusicAuthorization.request()
        XCTAssertEqual(again, .authorized, "remembered: not asked again")

        var other = environment!
        other.applicationIdentifier = "another-app"
        MusicKitEnvironment.current = other
        XCTAssertEqual(MusicAuthorization.currentStatus, .notDetermined, "each app is asked on its own")
        try MusicAuthorizationSettings.set(.denied, for: "another-app")
        XCTAssertEqual(MusicAuthorization.currentStatus, .denied)
        XCTAssertEqual(MusicAuthorizationSettings.decisions, ["workout-app": .authorized, "another-app": .denied])
    }

    func testSubscriptionNeedsAuthorization() async throws {
        do {
            _ = try await MusicSubscription.current
            XCTFail("expected permissionDenied")
        } catch let error as MusicSubscription.Error {
            XCTAssertEqual(error, .permissionDenied)
            XCTAssertNotNil(error.recoverySuggestion)
        }
    }

    func testSubscriptionFollowsTheAccount() async throws {
        try MusicAuthorizationSettings.set(.authorized, for: "workout-app")
        let subscribed = try await MusicSubscription.current
        XCTAssertTrue(subscribed.canPlayCatalogContent, "a fresh account is subscribed")
        XCTAssertFalse(subscribed.canBecomeSubscriber)
        try setAccount { $0.isSubscribed = false; $0.hasCloudLibraryEnabled = false }
        let none = try await MusicSubscription.current
        XCTAssertFalse(none.canPlayCatalogContent)
        XCTAssertTrue(none.canBecomeSubscriber)
        XCTAssertFalse(none.hasCloudLibraryEnabled)
    }

    @MainActor
    func testTheTalksSubscriptionLoopShowsTheOfferAndSeesASubscriptionMadeInAnotherProcess() async throws {
        try MusicAuthorizationSettings.set(.authorized, for: "workout-app")
        try setAccount { $0.isSubscribed = false }
        let model = SubscriptionModel()
        XCTAssertEqual(model.options.messageIdentifier, .playMusic)
        XCTAssertEqual(model.options.action, .subscribe)

        let seen = Mutex<[Bool]>([])
        let loop = Task { @MainActor in
            await model.task { subscription in
                seen.withLock { $0.append(subscription.canPlayCatalogContent) }
                return subscription.canPlayCatalogContent
            }
        }
        // The offer shows only for someone who can become a subscriber.
        for _ in 0..<50 where model.subscription == nil { try await Task.sleep(nanoseconds: 20_000_000) }
        XCTAssertTrue(model.showsSubscriptionButton)

        // Another process subscribes: `musickit account` writes the same account file.
        let musickit = try XCTUnwrap(Self.musickitExecutable(), "the musickit binary is built with the tests")
        let process = Process()
        process.executableURL = musickit
        process.arguments = ["account", "--subscription", "active"]
        process.environment = ["MUSICKIT_CONFIG_DIR": environment.configDirectory.path,
                               "MUSICKIT_DATA_DIR": environment.dataDirectory.path, "HOME": NSHomeDirectory()]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)

        let deadline = Date(timeIntervalSinceNow: 5)
        while !(model.subscription?.canPlayCatalogContent ?? false) && Date() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        await loop.value
        XCTAssertEqual(model.subscription?.canPlayCatalogContent, true, "the loop saw the other process's change")
        XCTAssertFalse(model.showsSubscriptionButton, "no offer for a subscriber")
        XCTAssertEqual(seen.withLock { $0 }.last, true)
    }

    func testTheOfferMessageFollowsTheMessageIdentifier() {
        let play = MusicSubscriptionOffer.message(for: .init(messageIdentifier: .playMusic), itemTitle: "Nebula")
        XCTAssertEqual(play.headline, "Play “Nebula” with Apple Music")
        let add = MusicSubscriptionOffer.message(for: .init(messageIdentifier: .addMusic), itemTitle: nil)
        XCTAssertTrue(add.headline.hasPrefix("Add music to your library"))
        let join = MusicSubscriptionOffer.message(for: .default, itemTitle: nil)
        XCTAssertEqual(join.headline, "Join Apple Music")
        XCTAssertEqual(MusicSubscriptionOffer.Options.default.messageIdentifier, .join)
        let options = MusicSubscriptionOffer.Options(action: .subscribe, messageIdentifier: .playMusic, itemID: "1",
                                                     affiliateToken: "aff", campaignToken: "camp")
        XCTAssertEqual(options.affiliateToken, "aff")
        XCTAssertEqual(options.campaignToken, "camp")
    }

    func testAcceptingTheOfferSubscribesWithoutLeavingTheApp() async throws {
        try setAccount { $0.isSubscribed = false }
        var pipes: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipes), 0)
        var output: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&output), 0)
        _ = "y\n".withCString { write(pipes[1], $0, 2) }
        let subscribed = try await MusicSubscriptionOffer.present(
            options: .init(messageIdentifier: .playMusic, itemID: BundledCatalog.ezerEv, affiliateToken: "partner"),
            input: pipes[0], output: output[1])
        close(output[1])
        var screen = [UInt8](repeating: 0, count: 4_096)
        let count = read(output[0], &screen, screen.count)
        let text = String(decoding: screen[0..<max(0, count)], as: UTF8.self)
        XCTAssertTrue(subscribed)
        XCTAssertTrue(text.contains("Play “Ezer Év” with Apple Music"), text)
        XCTAssertTrue(MusicAccountSettings.load().settings.isSubscribed)
        XCTAssertEqual(MusicAccountSettings.load().settings.offerAttribution, "partner")
        for descriptor in pipes + [output[0]] { close(descriptor) }
    }

    func testACorruptAccountFileIsKeptAsideAndReported() throws {
        try FileManager.default.createDirectory(at: environment.configDirectory, withIntermediateDirectories: true)
        let file = environment.configDirectory.appendingPathComponent("account.json")
        try #"{"storefront": "usa", "isSubscribed": true}"#.write(to: file, atomically: true, encoding: .utf8)
        let (settings, problem) = MusicAccountSettings.load()
        XCTAssertEqual(settings, MusicAccountSettings(), "defaults are used meanwhile")
        let kept = try XCTUnwrap(problem?.keptAt)
        XCTAssertTrue(problem!.description.contains("storefront"), problem!.description)
        XCTAssertEqual(try String(contentsOfFile: kept, encoding: .utf8), #"{"storefront": "usa", "isSubscribed": true}"#,
                       "nothing of it is lost")
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path))
    }

    func testConcurrentWritersFromSeveralProcessesAllLand() throws {
        let musickit = try XCTUnwrap(Self.musickitExecutable())
        let environmentVariables = ["MUSICKIT_CONFIG_DIR": environment.configDirectory.path,
                                    "MUSICKIT_DATA_DIR": environment.dataDirectory.path, "HOME": NSHomeDirectory()]
        let before = MusicAccountSettings.load().settings.revision
        let processes = (0..<8).map { index -> Process in
            let process = Process()
            process.executableURL = musickit
            process.arguments = ["account", "--explicit", index % 2 == 0 ? "on" : "off"]
            process.environment = environmentVariables
            process.standardOutput = FileHandle.nullDevice
            return process
        }
        for process in processes { try process.run() }
        for process in processes { process.waitUntilExit(); XCTAssertEqual(process.terminationStatus, 0) }
        let (settings, problem) = MusicAccountSettings.load()
        XCTAssertNil(problem, "the file is never torn")
        XCTAssertEqual(settings.revision, before + 8, "every write landed, none lost")
    }

    static func musickitExecutable() -> URL? {
        var directory = Bundle.main.bundleURL
        while directory.pathComponents.count > 1 {
            let candidate = directory.appendingPathComponent("musickit")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }
}

import Synchronization
