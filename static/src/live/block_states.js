// The states of an edit block that are not final yet (the server's EditState, whose final
// states are applied, rolled_back and failed). The one list the page's modules share.
export const IN_FLIGHT = new Set(["locating", "streaming"]);
