/** Part of the delivery islands: where a held delivery waits. */

/** "behind #N": the earlier delivery of the order a held one waits on. */
export function HeldBehind({ id }: { id: number }) {
  return (
    <>
      {" "}
      <span class="nowrap" data-testid="held-behind">
        behind{" "}
        <a
          href={`/console/deliveries/${id}`}
          title="Held until this earlier delivery of the order is done or refused"
        >
          #{id}
        </a>
      </span>
    </>
  );
}
