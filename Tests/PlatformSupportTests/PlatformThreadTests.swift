@testable import PlatformSupport
import CLinux
import Foundation
import Synchronization
import XCTest

/// Where the engine's threads start (see `PlatformThread.init`).
final class PlatformThreadTests: XCTestCase {
    private static func cpus(_ numbers: [Int32]) -> cpu_set_t {
        var set = cpu_set_t()
        for number in numbers { musickit_cpu_set(number, &set) }
        return set
    }

    private static func numbers(_ set: cpu_set_t) -> [Int32] {
        var set = set
        return (0..<64).filter { musickit_cpu_isset($0, &set) != 0 }
    }

    /// A new thread starts on the CPUs its creator may use, less the one the creator runs on;
    /// with nothing else left (or the creator's CPU unknown), anywhere.
    func testAThreadStartsOnAnotherCPUThanItsCreators() {
        XCTAssertEqual(PlatformThread.startingCPUs(allowed: Self.cpus([0, 1]), current: 0).map(Self.numbers), [1])
        XCTAssertEqual(PlatformThread.startingCPUs(allowed: Self.cpus([0, 1, 2, 3]), current: 2).map(Self.numbers), [0, 1, 3])
        XCTAssertEqual(PlatformThread.startingCPUs(allowed: Self.cpus([1, 3]), current: 0).map(Self.numbers), [1, 3],
                       "a creator on a CPU outside the set (it moved) leaves the set as it is")
        XCTAssertNil(PlatformThread.startingCPUs(allowed: Self.cpus([2]), current: 2), "one CPU: nowhere else to start")
        XCTAssertNil(PlatformThread.startingCPUs(allowed: Self.cpus([0, 1]), current: -1), "the creator's CPU unknown")
    }

    /// Once running, a thread started away from its creator may use every CPU its creator may:
    /// the start elsewhere does not stick.
    func testAThreadMayThenRunOnEveryCPUItsCreatorMay() {
        var creators = cpu_set_t()
        XCTAssertEqual(sched_getaffinity(0, MemoryLayout<cpu_set_t>.size, &creators), 0)
        let seen = Mutex<[Int32]?>(nil)
        let thread = PlatformThread(name: "test-affinity", startsOnAnotherCPU: true) {
            var own = cpu_set_t()
            _ = sched_getaffinity(0, MemoryLayout<cpu_set_t>.size, &own)
            let allowed = Self.numbers(own)
            seen.withLock { $0 = allowed }
        }
        thread.join()
        XCTAssertEqual(seen.withLock { $0 }, Self.numbers(creators))
    }
}
