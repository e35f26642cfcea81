import Testing
import TouchstoneClient
import TouchstoneServer

/// touchstoned's budget of locked memory for clients' frames.
@Suite("touchstoned's memory budget")
struct MemoryBudgetTests {
    @Test("a uid takes up to its own limit and no more; another uid takes its own meanwhile, up to what is left of the total; what is given back can be taken again")
    func perUserAndTotal() {
        let budget = MemoryBudget(perUser: 100, total: 150)
        let alice = budget.of(1000), bob = budget.of(1001), carol = budget.of(1002)
        #expect(alice.take(60) && alice.take(40))
        #expect(!alice.take(1), "past alice's own limit")
        #expect(budget.holding(1000) == 100)
        #expect(bob.take(50))
        #expect(!carol.take(1), "past the total")
        alice.give(40)
        #expect(carol.take(40))
        #expect(budget.holding(1000) == 60 && budget.holding(1002) == 40)
    }

    @Test("a frame's hold gives back everything it took when the frame goes")
    func holdGivesBack() {
        let budget = MemoryBudget(perUser: 100, total: 100)
        do {
            let hold = FrameHold(budget: budget.of(7))
            #expect(hold.take(70))
            #expect(!hold.take(40))
            #expect(budget.holding(7) == 70)
        }
        #expect(budget.holding(7) == 0)
    }
}
